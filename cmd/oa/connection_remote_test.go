package main

import (
	"context"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oa-dev/oa/connector/sandbox"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/hosttest"
)

type echoIn struct {
	Text string `json:"text"`
}

type echoOut struct {
	Text string `json:"text"`
}

// TestConnectionRemoteCLI: `oa connection add --url` records a remote
// server with a secret header, `show` names the URL, plain HTTP and the
// header (never its value), `verify` records the inventory and protocol;
// http:// to a non-loopback host is refused without --plain-http, a URL
// with a token is refused without echoing it, and the secret appears in no
// output and no file under OA_HOME. A stopped server is a named refusal.
func TestConnectionRemoteCLI(t *testing.T) {
	const secret = "k-77c1d9aa04"
	s := mcp.NewServer(&mcp.Implementation{Name: "remote-cli", Version: "v1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, echoOut, error) {
			return nil, echoOut(in), nil
		})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") != secret {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		handler.ServeHTTP(w, r)
	}))
	defer srv.Close()
	p := newPublisher(t)
	home := os.Getenv("OA_HOME")
	p.ok("host", "init", "--publisher-key", p.path("publisher.pub"), "--authority-key", p.path("authority.pub"))
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	p.refused("connection_invalid", "connection", "add-remote", "far", "http://mcp.example.com/mcp", "--connector", "far.test", "--as", "Dr Ada")
	out := p.refused("connection_invalid", "connection", "add-remote", "tok", "https://mcp.example.com/mcp?token=ghp_abcdefghijklmnopqrstuvwxyz0123456789", "--connector", "far.test", "--as", "Dr Ada")
	if strings.Contains(out, "ghp_") {
		t.Fatalf("the refusal echoes the token:\n%s", out)
	}
	p.ok("connection", "add-remote", "crm", srv.URL+"/mcp", "--connector", "crm.test", "--header", "X-Api-Key", "--secret-file", keyFile, "--as", "Dr Ada")
	p.ok("connection", "verify", "crm", "--as", "Dr Ada")
	show := p.ok("connection", "show", "crm")
	for _, want := range []string{srv.URL + "/mcp", "plain-http yes: unencrypted (loopback)", "auth       headers: X-Api-Key", "protocol   2025-11-25", "tools      echo"} {
		if !strings.Contains(show, want) {
			t.Fatalf("show lacks %q:\n%s", want, show)
		}
	}
	if strings.Contains(show, secret) {
		t.Fatalf("show prints the secret:\n%s", show)
	}
	p.ok("connection", "add-remote", "far", "http://mcp.example.com/mcp", "--connector", "far.test", "--plain-http", "--as", "Dr Ada")
	if show := p.ok("connection", "show", "far"); !strings.Contains(show, "unencrypted (--plain-http)") {
		t.Fatalf("show does not display --plain-http:\n%s", show)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stopped := "http://" + l.Addr().String() + "/mcp"
	l.Close()
	p.ok("connection", "add-remote", "gone", stopped, "--connector", "crm.test", "--as", "Dr Ada")
	p.refused("remote_unreachable", "connection", "verify", "gone", "--as", "Dr Ada")

	err = filepath.WalkDir(home, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err == nil && strings.Contains(string(b), secret) {
			t.Errorf("%s holds the secret", path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPlanShowsPlainHTTP: a plan that uses a remote connection says so,
// and says when its traffic is unencrypted by --plain-http, before anyone
// approves it (oa resolve prints what oa bind asks about).
func TestPlanShowsPlainHTTP(t *testing.T) {
	srv := sandbox.NewServer("")
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer ts.Close()
	h := hosttest.New(t, nil)
	h.WriteRegistry(resolve.StarterRegistry(hosttest.Name))
	t.Setenv("OA_HOME", h.Home)
	cliOK(t, "connection", "add-remote", "records", ts.URL+"/mcp", "--connector", resolve.SandboxConnector, "--plain-http", "--as", "Dr Ada")
	cliOK(t, "connection", "verify", "records", "--as", "Dr Ada")
	out := cliOK(t, "resolve", h.Ref, "--deployment", "clinic")
	wantHas(t, "the plan does not show the remote connection's plain HTTP", out, "connection records is remote: "+ts.URL+"/mcp", "PLAIN HTTP: unencrypted (--plain-http)")
	// No process of a remote server runs here: the plan describes no
	// profile for it (it printed "confinement of records@2: default … no
	// network", issue 39).
	wantHas(t, "the plan describes a confinement profile for a remote connection", out, "confinement of records@", ": none here: a remote server")
	wantLacks(t, "the plan describes a confinement profile for a remote connection", out, "no network", ": default")
}

// TestConnectionRemoteTransportChange: a server that moves from Streamable
// HTTP to the older HTTP+SSE transport (answering the Streamable POST
// 405) is verified again over SSE, `show` says so, and the connection's
// revision goes up as for a changed inventory.
func TestConnectionRemoteTransportChange(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "remote-cli", Version: "v1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, echoOut, error) {
			return nil, echoOut(in), nil
		})
	getServer := func(*http.Request) *mcp.Server { return s }
	streamable, sse := mcp.NewStreamableHTTPHandler(getServer, nil), mcp.NewSSEHandler(getServer, nil)
	var legacy atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case !legacy.Load():
			streamable.ServeHTTP(w, r)
		case r.Method == http.MethodPost && r.URL.RawQuery == "":
			w.WriteHeader(http.StatusMethodNotAllowed)
		default:
			sse.ServeHTTP(w, r)
		}
	}))
	defer srv.Close()
	p := newPublisher(t)
	p.ok("host", "init", "--publisher-key", p.path("publisher.pub"), "--authority-key", p.path("authority.pub"))
	p.ok("connection", "add-remote", "crm", srv.URL+"/mcp", "--connector", "crm.test", "--as", "Dr Ada")
	p.ok("connection", "verify", "crm", "--as", "Dr Ada")
	show := p.ok("connection", "show", "crm")
	wantHas(t, "first verification", show, "(Streamable HTTP)", "revision   1")
	legacy.Store(true)
	p.ok("connection", "verify", "crm", "--as", "Dr Ada")
	show = p.ok("connection", "show", "crm")
	wantHas(t, "after the server moved to HTTP+SSE", show, "HTTP+SSE", "revision   2")
}
