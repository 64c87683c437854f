package remote

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector/secretfile"
)

// Config is how to reach a downstream MCP server over Streamable HTTP
// instead of starting one. Like connector.Config it never holds a secret
// value: it names the 0600 files a header value or bearer token is read
// from when a request is made.
type Config struct {
	// URL is the server's MCP endpoint, normalized by Normalize.
	URL string `json:"url"`
	// PlainHTTP allows http:// to a host that is not a loopback address
	// (shown wherever the connection is shown).
	PlainHTTP bool `json:"plainHttp,omitempty"`
	// Auth is the authentication method: AuthNone, AuthHeaders, AuthBearer
	// or AuthOAuth. It is recorded so a change of method raises the
	// revision; it is derived from the other fields, never set by hand.
	Auth string `json:"auth"`
	// Headers are extra request headers whose values are secrets.
	Headers []Header `json:"headers,omitempty"`
	// BearerSecretFile is a 0600 file holding the bearer token sent as
	// Authorization: Bearer.
	BearerSecretFile string `json:"bearerSecretFile,omitempty"`
	// CAFile is a PEM file of authorities trusted for this server, in
	// addition to the system's.
	CAFile string `json:"caFile,omitempty"`
	// OAuth, when set, obtains the bearer token from an OAuth 2.1
	// authorization server (see OAuth).
	OAuth *OAuth `json:"oauth,omitempty"`
}

// Header is one request header whose value is read from a 0600 file
// when a request is made.
type Header struct {
	Name       string `json:"name"`
	SecretFile string `json:"secretFile"`
}

// Authentication methods of a remote connection.
const (
	AuthNone    = "none"
	AuthHeaders = "headers"
	AuthBearer  = "bearer"
	AuthOAuth   = "oauth"
)

// Limits and deadlines of a remote connection's HTTP traffic. A response
// body or one server-sent event over maxBody ends the session; the
// transport's own phases (dial, TLS) are bounded here, a whole request by
// the caller's context (Dial.Timeout for the handshake, the coordinator's
// effect timeout).
const (
	maxBody      = 4 << 20
	maxCAFile    = 1 << 20
	dialTimeout  = 10 * time.Second
	tlsTimeout   = 10 * time.Second
	idlePerHost  = 8
	idleTimeout  = 90 * time.Second
	headerMaxLen = 8 << 10
)

// Transports a remote server may be reached over (Description.Transport).
const (
	// TransportStreamable is MCP Streamable HTTP, what oa speaks first.
	TransportStreamable = "streamable-http"
	// TransportSSE is the older HTTP+SSE transport (protocol 2024-11-05),
	// used only for a server that answers the Streamable HTTP POST 404 or
	// 405, as the MCP specification's backwards-compatibility rule says.
	TransportSSE = "sse"
)

// protocolVersion is the version oa asks a remote server for: the
// newest (stateless, server/discover). The go-sdk falls back to the
// 2025-11-25 session handshake for a server that does not speak it.
const protocolVersion = "2026-07-28"

// reservedHeaders are set by the MCP transport or by oa itself; a
// connection may not override them.
var reservedHeaders = map[string]bool{
	"Accept": true, "Authorization": true, "Connection": true, "Content-Length": true, "Content-Type": true,
	"Host": true, "Last-Event-Id": true, "Mcp-Protocol-Version": true, "Mcp-Session-Id": true,
	"Te": true, "Transfer-Encoding": true, "Upgrade": true,
}

// Normalize checks r and returns it normalized: the URL with a
// lower-case scheme and host, no default port and at least "/" as path,
// and Auth derived from the credentials given. http:// is refused unless
// the host is a loopback address or PlainHTTP is set. A refusal names the
// field (url, headers[i], …) and the rule, never a value.
func Normalize(r Config) (Config, error) {
	var refused blocking.List
	bad := func(path, format string, args ...any) {
		refused = append(refused, blocking.New(blocking.ConnectorConfigInvalid, format, args...).At("", "remote."+path))
	}
	u, err := url.Parse(r.URL)
	switch {
	case r.URL == "" || err != nil:
		bad("url", "give the server's MCP endpoint as an absolute https:// URL")
	case u.Scheme != "https" && u.Scheme != "http", u.Hostname() == "", u.Opaque != "":
		bad("url", "the URL must be absolute and start with https:// (or http:// for a loopback address)")
	case u.User != nil:
		bad("url", "the URL holds a user name or password; pass credentials with --header NAME --secret-file F or --bearer-secret-file F")
	case u.Fragment != "" || strings.Contains(r.URL, "#"):
		bad("url", "the URL has a #fragment, which HTTP never sends; remove it")
	default:
		u.Scheme = strings.ToLower(u.Scheme)
		u.Host = strings.ToLower(u.Host)
		if p := u.Port(); (u.Scheme == "https" && p == "443") || (u.Scheme == "http" && p == "80") {
			u.Host = strings.TrimSuffix(u.Host, ":"+p)
		}
		if u.Path == "" {
			u.Path = "/"
		}
		switch {
		case u.Scheme == "https" && r.PlainHTTP:
			bad("plainHttp", "--plain-http is for an http:// URL; an https:// URL is always encrypted")
		case u.Scheme == "http" && !r.PlainHTTP && !IsLoopback(u.Hostname()):
			bad("url", "http:// is unencrypted: use https://, or pass --plain-http to accept plain HTTP to this host (shown in the plan)")
		}
		r.URL = u.String()
	}
	if r.CAFile != "" && strings.HasPrefix(r.URL, "http://") {
		bad("caFile", "--ca-file is for an https:// URL")
	}
	seen := map[string]bool{}
	for i, hd := range r.Headers {
		name := http.CanonicalHeaderKey(hd.Name)
		switch {
		case !httpguts.ValidHeaderFieldName(hd.Name) || len(hd.Name) > 128:
			bad(headerPath(i), "a header name is an HTTP token (letters, digits and !#$%%&'*+-.^_`|~)")
		case reservedHeaders[name]:
			bad(headerPath(i), "header %s is set by the MCP transport or oa; pass a bearer token with --bearer-secret-file", name)
		case seen[name]:
			bad(headerPath(i), "header %s is given twice", name)
		case hd.SecretFile == "":
			bad(headerPath(i), "each --header NAME needs its --secret-file F (a 0600 file holding the value)")
		}
		seen[name] = true
		r.Headers[i].Name = name
	}
	r.Auth = AuthNone
	switch {
	case r.OAuth != nil:
		normalizeOAuth(&r, bad)
	case r.BearerSecretFile != "":
		r.Auth = AuthBearer
	case len(r.Headers) > 0:
		r.Auth = AuthHeaders
	}
	return r, refused.Err()
}

func headerPath(i int) string { return "headers[" + itoa(i) + "]" }

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// IsLoopback reports whether host (a name or an address, without port)
// is this machine: localhost, 127.0.0.0/8 or ::1.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(strings.Trim(host, "[]"))
	return err == nil && a.IsLoopback()
}

// readSecretValue reads one secret value: a 0600 file holding it, one
// trailing line end dropped. A value with a line end, CR or NUL inside is
// refused: it would split the header it is sent in.
func readSecretValue(path string) (string, error) {
	f, err := secretfile.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, headerMaxLen+3))
	if err != nil {
		return "", blocking.New(blocking.ConnectorSecretUnavailable, "the secret file cannot be read")
	}
	data = bytes.TrimSuffix(bytes.TrimSuffix(data, []byte("\n")), []byte("\r"))
	switch {
	case len(data) == 0:
		return "", blocking.New(blocking.ConnectorSecretUnavailable, "the secret file is empty")
	case len(data) > headerMaxLen:
		return "", blocking.New(blocking.ConnectorSecretUnavailable, "the secret value is longer than %d bytes", headerMaxLen)
	case bytes.ContainsAny(data, "\r\n\x00"):
		return "", blocking.New(blocking.ConnectorSecretUnavailable, "the secret file holds more than one line; it holds the value only")
	case !httpguts.ValidHeaderFieldValue(string(data)):
		return "", blocking.New(blocking.ConnectorSecretUnavailable, "the secret value is not a valid HTTP header value")
	}
	return string(data), nil
}

// sendTrace is what the transport saw of one operation's requests: whether
// any was written to the server, and the refusal that explains a failure
// (401, 403, an unreachable or untrusted server, an oversized answer).
type sendTrace struct {
	mu    sync.Mutex
	wrote bool
	code  blocking.Code
	// refusal is the refusal behind code when it came with its own detail
	// (an OAuth token that could not be had).
	refusal error
	// legacy is set when the server answered a request 404 or 405: a
	// server of the HTTP+SSE transport, if nothing else works.
	legacy bool
}

type traceKey struct{}

func withTrace(ctx context.Context) (context.Context, *sendTrace) {
	t := &sendTrace{}
	return context.WithValue(ctx, traceKey{}, t), t
}

func traceOf(ctx context.Context) *sendTrace {
	t, _ := ctx.Value(traceKey{}).(*sendTrace)
	return t
}

func (t *sendTrace) note(code blocking.Code) {
	if t == nil {
		return
	}
	t.mu.Lock()
	if t.code == "" {
		t.code = code
	}
	t.mu.Unlock()
}

// noteRefusal notes code with err as its refusal (for its detail), unless
// a code was noted before.
func (t *sendTrace) noteRefusal(code blocking.Code, err error) {
	if t == nil {
		return
	}
	t.mu.Lock()
	if t.code == "" {
		t.code, t.refusal = code, err
	}
	t.mu.Unlock()
}

func (t *sendTrace) sent() {
	if t != nil {
		t.mu.Lock()
		t.wrote = true
		t.mu.Unlock()
	}
}

// refusalOr returns the refusal noted with its own detail, else fallback.
func (t *sendTrace) refusalOr(fallback error) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.refusal != nil {
		return t.refusal
	}
	return fallback
}

// notLegacy notes a 404 or 405 answer.
func (t *sendTrace) noteLegacy() {
	if t != nil {
		t.mu.Lock()
		t.legacy = true
		t.mu.Unlock()
	}
}

// sawLegacy reports whether a request was answered 404 or 405.
func (t *sendTrace) sawLegacy() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.legacy
}

// stateOrNone is state, or nothing for an operation not traced.
func (t *sendTrace) stateOrNone() (bool, blocking.Code) {
	if t == nil {
		return false, ""
	}
	return t.state()
}

// state returns whether anything was written and the noted refusal.
func (t *sendTrace) state() (bool, blocking.Code) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.wrote, t.code
}

// roundTripper is the http.RoundTripper of a remote connection: it
// adds the connection's secrets to every request as it is made (read from
// their files then, never kept), notes in the operation's sendTrace
// whether the request was written and why it failed, and holds every
// response body to maxBody.
type roundTripper struct {
	base   *http.Transport
	remote Config
	oauth  *oauthSource // nil unless the connection uses OAuth
	origin *url.URL     // the connection URL's scheme and host
}

func (t *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	tr := traceOf(req.Context())
	// Secrets go only to the connection's own origin: an HTTP+SSE server
	// names the address of its messages, and it may name another host.
	if req.URL.Scheme != t.origin.Scheme || req.URL.Host != t.origin.Host {
		tr.note(blocking.RemoteOriginChanged)
		return nil, blocking.New(blocking.RemoteOriginChanged, "the server named another origin for its messages")
	}
	req = req.Clone(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { tr.sent() },
	}))
	if err := t.addSecrets(req.Header); err != nil {
		tr.note(blocking.ConnectorSecretUnavailable)
		return nil, err
	}
	var access string
	if t.oauth != nil {
		// Once the server refused a token in this operation, no other is
		// fetched for it (the protocol's fallback request would otherwise
		// refresh and try again): the operation is refused, not retried.
		if _, code := tr.stateOrNone(); code == blocking.OAuthTokenRejected {
			return nil, blocking.New(blocking.OAuthTokenRejected, "the server answered 401 to the connection's OAuth access token")
		}
		var err error
		if access, err = t.oauth.token(req.Context()); err != nil {
			if r := blocking.Refusals(err); len(r) > 0 {
				tr.noteRefusal(r[0].Code, err)
			}
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+access)
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		tr.note(transportCode(err))
		return nil, err
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		if t.oauth != nil {
			t.oauth.reject(access)
			tr.note(blocking.OAuthTokenRejected)
			break
		}
		tr.note(blocking.RemoteUnauthorized)
	case http.StatusForbidden:
		tr.note(blocking.RemoteForbidden)
	case http.StatusNotFound, http.StatusMethodNotAllowed:
		tr.noteLegacy()
	}
	if isEventStream(req) {
		// An HTTP+SSE session's one long stream carries every answer:
		// each event is held to maxBody by the SSE client instead.
		return resp, nil
	}
	resp.Body = &cappedBody{ReadCloser: resp.Body, left: maxBody, trace: tr}
	return resp, nil
}

// isEventStream reports whether req opens a standalone event stream (a GET
// for text/event-stream): only the HTTP+SSE transport makes one, since
// oa's Streamable HTTP client does not open its standalone stream.
func isEventStream(req *http.Request) bool {
	return req.Method == http.MethodGet && req.Header.Get("Accept") == "text/event-stream"
}

// addSecrets sets the connection's secret headers, read now.
func (t *roundTripper) addSecrets(h http.Header) error {
	for _, hd := range t.remote.Headers {
		v, err := readSecretValue(hd.SecretFile)
		if err != nil {
			return err
		}
		h.Set(hd.Name, v)
	}
	if t.remote.BearerSecretFile != "" {
		v, err := readSecretValue(t.remote.BearerSecretFile)
		if err != nil {
			return err
		}
		h.Set("Authorization", "Bearer "+v)
	}
	return nil
}

// transportCode names why a request could not be made: the server could
// not be reached, or its certificate was not trusted. Anything else (a
// reset mid-answer) is left to the caller, which knows whether the request
// was written.
func transportCode(err error) blocking.Code {
	var (
		dnsErr  *net.DNSError
		opErr   *net.OpError
		certErr *tls.CertificateVerificationError
		unknown x509.UnknownAuthorityError
		host    x509.HostnameError
		invalid x509.CertificateInvalidError
		alert   tls.AlertError
		recErr  tls.RecordHeaderError
	)
	switch {
	case errors.As(err, &certErr), errors.As(err, &unknown), errors.As(err, &host), errors.As(err, &invalid), errors.As(err, &alert), errors.As(err, &recErr):
		return blocking.RemoteTLSUntrusted
	case errors.As(err, &dnsErr):
		return blocking.RemoteUnreachable
	case errors.As(err, &opErr) && opErr.Op == "dial":
		return blocking.RemoteUnreachable
	}
	return ""
}

// cappedBody fails a read past its limit, so neither a JSON answer nor an
// event stream can make oa buffer more than maxBody of one response
// (the go-sdk reads a JSON answer whole).
type cappedBody struct {
	io.ReadCloser
	left  int64
	trace *sendTrace
}

var errTooLarge = errors.New("connector: remote response over the size limit")

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		b.trace.note(blocking.RemoteTooLarge)
		return 0, errTooLarge
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// newHTTP returns the HTTP client of one remote session: its own
// pooled transport (closed with the session), TLS 1.2 or later with the
// connection's authorities added to the system's, bounded dial and
// handshake, no redirects (a redirect could carry the secret headers to
// another host).
func newHTTP(r Config) (*http.Client, *http.Transport, error) {
	tlsConf := &tls.Config{MinVersion: tls.VersionTLS12}
	if r.CAFile != "" {
		pool, err := loadCAFile(r.CAFile)
		if err != nil {
			return nil, nil, err
		}
		tlsConf.RootCAs = pool
	}
	base := &http.Transport{
		Proxy:                  http.ProxyFromEnvironment,
		DialContext:            (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:        tlsConf,
		TLSHandshakeTimeout:    tlsTimeout,
		ForceAttemptHTTP2:      true,
		MaxIdleConnsPerHost:    idlePerHost,
		IdleConnTimeout:        idleTimeout,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: 64 << 10,
	}
	origin, err := url.Parse(r.URL)
	if err != nil {
		return nil, nil, blocking.New(blocking.ConnectorConfigInvalid, "the URL does not parse")
	}
	client := &http.Client{
		Transport: &roundTripper{base: base, remote: r, origin: &url.URL{Scheme: origin.Scheme, Host: origin.Host}},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	return client, base, nil
}

// loadCAFile reads a PEM file of authorities (at most maxCAFile) into a
// copy of the system pool.
func loadCAFile(path string) (*x509.CertPool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, blocking.New(blocking.RemoteCAInvalid, "the CA file cannot be opened")
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxCAFile+1))
	if err != nil || len(data) > maxCAFile {
		return nil, blocking.New(blocking.RemoteCAInvalid, "the CA file cannot be read or is larger than 1 MiB")
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(data) {
		return nil, blocking.New(blocking.RemoteCAInvalid, "the CA file holds no PEM certificate")
	}
	return pool, nil
}

// refusalFor is the refusal for a noted transport failure.
func refusalFor(code blocking.Code, starting bool) error {
	switch code {
	case blocking.RemoteUnreachable:
		return blocking.New(code, "no connection could be made to the server")
	case blocking.RemoteTLSUntrusted:
		return blocking.New(code, "the server's certificate did not verify")
	case blocking.RemoteUnauthorized:
		return blocking.New(code, "the server answered 401")
	case blocking.RemoteForbidden:
		return blocking.New(code, "the server answered 403")
	case blocking.OAuthTokenRejected:
		return blocking.New(code, "the server answered 401 to the connection's OAuth access token")
	case blocking.RemoteTooLarge:
		return blocking.New(code, "a response was larger than %d bytes", maxBody)
	case blocking.ConnectorSecretUnavailable:
		return blocking.New(code, "a secret header or token could not be read")
	case blocking.RemoteOriginChanged:
		return blocking.New(code, "the server named another origin for its messages; nothing was sent there")
	}
	if starting {
		return blocking.New(blocking.RemoteStartFailed, "the server did not complete the MCP initialize handshake")
	}
	return blocking.New(blocking.ConnectorCallFailed, "the request failed")
}

// requestFailure explains a failed request on a remote session from what
// its transport saw: a noted refusal first (401, 403, unreachable,
// untrusted, too large, a secret unreadable), else remote_not_sent when
// nothing was written — whatever the context says, since a request never
// written changed nothing. ok is false when neither applies.
func requestFailure(tr *sendTrace) (error, bool) {
	wrote, code := tr.state()
	if code != "" {
		return tr.refusalOr(refusalFor(code, false)), true
	}
	if !wrote {
		return blocking.New(blocking.RemoteNotSent, "the request was not written to the server"), true
	}
	return nil, false
}
