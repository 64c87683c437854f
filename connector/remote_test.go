package connector_test

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/remote"
)

type lookupIn struct {
	ID string `json:"id"`
}

type lookupOut struct {
	Status string `json:"status"`
}

// remoteServer is a go-sdk MCP server over Streamable HTTP with one read
// tool ("lookup") and one that never answers ("hang"), and a "big" tool
// whose answer is over oa's response limit.
func remoteServer(t *testing.T, jsonResponse bool) *mcp.StreamableHTTPHandler {
	t.Helper()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	s := mcp.NewServer(&mcp.Implementation{Name: "remote-test", Version: "v1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "lookup", Description: "Look a thing up.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *mcp.CallToolRequest, in lookupIn) (*mcp.CallToolResult, lookupOut, error) {
			return nil, lookupOut{Status: "open:" + in.ID}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "hang", Description: "Never answers."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in lookupIn) (*mcp.CallToolResult, lookupOut, error) {
			select {
			case <-ctx.Done():
			case <-release:
			}
			return nil, lookupOut{}, errors.New("released")
		})
	mcp.AddTool(s, &mcp.Tool{Name: "big", Description: "Answers too much."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in lookupIn) (*mcp.CallToolResult, lookupOut, error) {
			return nil, lookupOut{Status: strings.Repeat("x", 5<<20)}, nil
		})
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{JSONResponse: jsonResponse})
}

// secretFile writes value to a 0600 file.
func secretFile(t *testing.T, value string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(p, []byte(value+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func codes(err error) []blocking.Code {
	var out []blocking.Code
	for _, r := range blocking.Refusals(err) {
		out = append(out, r.Code)
	}
	return out
}

func wantCode(t *testing.T, err error, code blocking.Code) {
	t.Helper()
	if !slices.Contains(codes(err), code) {
		t.Fatalf("want %s, got %v (%v)", code, codes(err), err)
	}
}

func remoteConfig(r remote.Config) connector.Config {
	return connector.Config{Remote: &r}
}

// TestRemoteDescribeAndCall: a remote server behind a secret header and a
// bearer token (both read from 0600 files per request) is described —
// tools and the protocol version agreed — and called, over both event
// stream and JSON answers; the secrets reach the server and a wrong one
// is refused 401/403 by name.
func TestRemoteDescribeAndCall(t *testing.T) {
	const apiKey, token = "k-3f9a1c7e", "tok-5d2b8e40"
	for _, jsonResponse := range []bool{false, true} {
		mcpHandler := remoteServer(t, jsonResponse)
		var seen atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch {
			case r.Header.Get("X-Api-Key") != apiKey:
				w.WriteHeader(http.StatusForbidden)
				return
			case r.Header.Get("Authorization") != "Bearer "+token:
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			seen.Add(1)
			mcpHandler.ServeHTTP(w, r)
		}))
		keyFile, tokenFile := secretFile(t, apiKey), secretFile(t, token)
		cfg := remoteConfig(remote.Config{URL: srv.URL + "/mcp", Headers: []remote.Header{{Name: "x-api-key", SecretFile: keyFile}}, BearerSecretFile: tokenFile})
		ctx := context.Background()
		d, err := connector.Describe(ctx, cfg, connector.Options{Timeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if d.Protocol != "2025-11-25" || len(d.Inventory.Tools) != 3 || d.Inventory.Digest == "" {
			t.Fatalf("description: %s %d tools", d.Protocol, len(d.Inventory.Tools))
		}
		s, err := connector.Open(ctx, cfg, connector.Options{Timeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.Call(ctx, "lookup", map[string]any{"id": "AB-1"})
		if err != nil || string(res.Structured) != `{"status":"open:AB-1"}` {
			t.Fatalf("call: %v %s", err, res.Structured)
		}
		// The token is read per request: a rotated file is used at once,
		// and a wrong token is a named refusal.
		if err := os.WriteFile(tokenFile, []byte("tok-wrong\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err = s.Call(ctx, "lookup", map[string]any{"id": "AB-1"})
		wantCode(t, err, blocking.RemoteUnauthorized)
		s.Close()
		if err := os.WriteFile(keyFile, []byte("k-wrong\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err = connector.Describe(ctx, cfg, connector.Options{Timeout: 10 * time.Second})
		wantCode(t, err, blocking.RemoteForbidden)
		if strings.Contains(err.Error(), "k-wrong") || strings.Contains(err.Error(), "tok-wrong") {
			t.Fatalf("a refusal quotes a secret: %v", err)
		}
		// A secret file that is not 0600 is refused before anything is sent.
		before := seen.Load()
		if err := os.Chmod(keyFile, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err = connector.Describe(ctx, cfg, connector.Options{Timeout: 10 * time.Second})
		wantCode(t, err, blocking.ConnectorSecretUnavailable)
		if seen.Load() != before {
			t.Fatal("a request was sent without its secret")
		}
		srv.Close()
	}
}

// TestRemoteStoppedServerIsUnreachable: nothing listening is a named
// refusal that says nothing was sent, for verification and for a call on
// a session whose server stopped.
func TestRemoteStoppedServerIsUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, err = connector.Describe(context.Background(), remoteConfig(remote.Config{URL: "http://" + addr + "/mcp"}), connector.Options{Timeout: 5 * time.Second})
	wantCode(t, err, blocking.RemoteUnreachable)

	srv := httptest.NewServer(remoteServer(t, false))
	s, err := connector.Open(context.Background(), remoteConfig(remote.Config{URL: srv.URL}), connector.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Inventory(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv.CloseClientConnections()
	srv.Close()
	// A call on the session may go out on a pooled connection the server
	// closed, which proves nothing about what it did: that is
	// connector_call_failed. A call on a new connection is refused
	// unreachable. Neither waits.
	_, err = s.Call(context.Background(), "lookup", map[string]any{"id": "AB-1"})
	if c := codes(err); !slices.Contains(c, blocking.RemoteUnreachable) && !slices.Contains(c, blocking.ConnectorCallFailed) {
		t.Fatalf("a call to a stopped server: %v", c)
	}

}

// TestRemoteUnansweredCallIsATimeout: a request that was sent and never
// answered ends in connector_timeout (its effect unknown), not in a
// refusal that says nothing was sent.
func TestRemoteUnansweredCallIsATimeout(t *testing.T) {
	srv := httptest.NewUnstartedServer(nil)
	t.Cleanup(srv.Close) // after the hanging handler is released (cleanups run last first)
	srv.Config.Handler = remoteServer(t, false)
	srv.Start()
	s, err := connector.Open(context.Background(), remoteConfig(remote.Config{URL: srv.URL}), connector.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Inventory(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = s.Call(ctx, "hang", map[string]any{"id": "AB-1"})
	wantCode(t, err, blocking.ConnectorTimeout)
}

// TestRemoteResponseTooLarge: an answer over the limit is refused by name
// and nothing past the limit is kept.
func TestRemoteResponseTooLarge(t *testing.T) {
	for _, jsonResponse := range []bool{false, true} {
		srv := httptest.NewServer(remoteServer(t, jsonResponse))
		s, err := connector.Open(context.Background(), remoteConfig(remote.Config{URL: srv.URL}), connector.Options{Timeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Call(context.Background(), "big", map[string]any{"id": "AB-1"})
		if c := codes(err); !slices.Contains(c, blocking.RemoteTooLarge) {
			t.Fatalf("json=%v: an oversized answer: %v", jsonResponse, c)
		}
		s.Close()
		srv.Close()
	}
}

// TestRemoteTLS: a server whose certificate this host does not trust is
// refused by name before anything is sent; with its authority in
// --ca-file it is verified.
func TestRemoteTLS(t *testing.T) {
	srv := httptest.NewTLSServer(remoteServer(t, false))
	defer srv.Close()
	_, err := connector.Describe(context.Background(), remoteConfig(remote.Config{URL: srv.URL}), connector.Options{Timeout: 5 * time.Second})
	wantCode(t, err, blocking.RemoteTLSUntrusted)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := connector.Describe(context.Background(), remoteConfig(remote.Config{URL: srv.URL, CAFile: ca}), connector.Options{Timeout: 5 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ca, []byte("not a certificate"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = connector.Describe(context.Background(), remoteConfig(remote.Config{URL: srv.URL, CAFile: ca}), connector.Options{Timeout: 5 * time.Second})
	wantCode(t, err, blocking.RemoteCAInvalid)
}

// TestRemoteBearerMiddleware: the go-sdk's own bearer-token middleware in
// front of the server refuses a missing or rejected token with 401, which
// oa names.
func TestRemoteBearerMiddleware(t *testing.T) {
	verify := func(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
		if tok != "good" {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{Expiration: time.Now().Add(time.Hour)}, nil
	}
	srv := httptest.NewServer(auth.RequireBearerToken(verify, nil)(remoteServer(t, false)))
	defer srv.Close()
	for tok, want := range map[string]error{"good": nil, "bad": errors.New("401")} {
		_, err := connector.Describe(context.Background(), remoteConfig(remote.Config{URL: srv.URL, BearerSecretFile: secretFile(t, tok)}), connector.Options{Timeout: 5 * time.Second})
		if want == nil && err != nil {
			t.Fatalf("%s: %v", tok, err)
		}
		if want != nil {
			wantCode(t, err, blocking.RemoteUnauthorized)
		}
	}
}

// TestRemoteProtocolAndTransport: oa asks for 2026-07-28 and a stateless
// server agrees to it (server/discover); a session server is spoken to at
// 2025-11-25; a server of the older HTTP+SSE transport, which answers the
// Streamable HTTP POST 405, is reached over SSE — and each says so in its
// description, so a change of either raises the connection's revision.
func TestRemoteProtocolAndTransport(t *testing.T) {
	const token = "tok-9c1e55aa"
	tool := func(s *mcp.Server) {
		mcp.AddTool(s, &mcp.Tool{Name: "lookup", Description: "Look a thing up.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
			func(ctx context.Context, _ *mcp.CallToolRequest, in lookupIn) (*mcp.CallToolResult, lookupOut, error) {
				return nil, lookupOut{Status: "open:" + in.ID}, nil
			})
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "remote-test", Version: "v1"}, nil)
	tool(server)
	getServer := func(*http.Request) *mcp.Server { return server }
	sse := mcp.NewSSEHandler(getServer, nil)
	for _, tc := range []struct {
		name, protocol, transport string
		handler                   http.Handler
	}{
		{"stateless", "2026-07-28", remote.TransportStreamable, mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{Stateless: true})},
		{"sessions", "2025-11-25", remote.TransportStreamable, mcp.NewStreamableHTTPHandler(getServer, nil)},
		{"sse", "2025-11-25", remote.TransportSSE, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// The older transport: a GET opens the stream, POSTs carry
			// messages to the address it names; a POST to the
			// stream's own address is not allowed.
			if r.Method == http.MethodPost && r.URL.RawQuery == "" {
				w.WriteHeader(http.StatusMethodNotAllowed)
				return
			}
			sse.ServeHTTP(w, r)
		})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var unauthorized atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Authorization") != "Bearer "+token {
					unauthorized.Add(1)
					w.WriteHeader(http.StatusUnauthorized)
					return
				}
				tc.handler.ServeHTTP(w, r)
			}))
			defer srv.Close()
			cfg := remoteConfig(remote.Config{URL: srv.URL + "/mcp", BearerSecretFile: secretFile(t, token)})
			ctx := context.Background()
			d, err := connector.Describe(ctx, cfg, connector.Options{Timeout: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if d.Protocol != tc.protocol || d.Transport != tc.transport || len(d.Inventory.Tools) != 1 {
				t.Fatalf("described as %s over %s with %d tools, want %s over %s", d.Protocol, d.Transport, len(d.Inventory.Tools), tc.protocol, tc.transport)
			}
			s, err := connector.Open(ctx, cfg, connector.Options{Timeout: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			res, err := s.Call(ctx, "lookup", map[string]any{"id": "AB-7"})
			if err != nil || string(res.Structured) != `{"status":"open:AB-7"}` {
				t.Fatalf("call: %v %+v", err, res)
			}
			if unauthorized.Load() != 0 {
				t.Fatalf("%d requests went without the token", unauthorized.Load())
			}
		})
	}
}

// TestRemoteSSEOtherOriginRefused: an HTTP+SSE server that names another
// host for its messages is refused by name, and that host never receives
// a request, so the connection's secret never leaves its origin.
func TestRemoteSSEOtherOriginRefused(t *testing.T) {
	const token = "tok-0a7d3321"
	var stolen atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stolen.Add(1)
		w.WriteHeader(http.StatusAccepted)
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: endpoint\ndata: %s/messages?session=1\n\n", other.URL)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()
	cfg := remoteConfig(remote.Config{URL: srv.URL + "/mcp", BearerSecretFile: secretFile(t, token)})
	_, err := connector.Describe(context.Background(), cfg, connector.Options{Timeout: 10 * time.Second})
	wantCode(t, err, blocking.RemoteOriginChanged)
	if stolen.Load() != 0 {
		t.Fatalf("the other origin received %d requests", stolen.Load())
	}
}

// TestRemoteNotFoundEverywhere: a URL that answers 404 to both transports
// is a start failure, promptly, never a hang.
func TestRemoteNotFoundEverywhere(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	_, err := connector.Describe(context.Background(), remoteConfig(remote.Config{URL: srv.URL + "/mcp"}), connector.Options{Timeout: 10 * time.Second})
	wantCode(t, err, blocking.RemoteStartFailed)
}

// TestRemoteHandshakeTimeout: a remote server that accepts the handshake
// and never answers is remote_timeout, whose fix speaks of the server and
// the network, not connector_timeout (a process tree ended).
func TestRemoteHandshakeTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	_, err := connector.Describe(context.Background(), remoteConfig(remote.Config{URL: srv.URL + "/mcp"}), connector.Options{Timeout: 300 * time.Millisecond})
	wantCode(t, err, blocking.RemoteTimeout)
}
