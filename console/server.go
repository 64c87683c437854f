package console

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/oci"
)

// Limits of the console's server.
const (
	// MaxBody bounds a request body: a form with a signature and a teach
	// text fits well under it.
	MaxBody = 64 << 10
	// SessionTTL is how long a browser session lasts after login.
	SessionTTL = 12 * time.Hour
	// MaxSessions bounds the sessions held at once; the oldest goes first.
	MaxSessions = 32
	// CookieName names the session cookie.
	CookieName = "oa_console"
)

// Options are the settings of a console.
type Options struct {
	// Host is the opened host the console serves; the caller closes it
	// after the console stops.
	Host *host.Host
	// Listen is the address to listen on, "127.0.0.1:0" when empty (port
	// 0 picks one). An address beyond loopback needs TLSCert and TLSKey.
	Listen string
	// TLSCert and TLSKey are PEM files of the certificate and key served.
	TLSCert, TLSKey string
	// Names are further host names people reach the console by (the
	// Host header's name); the address listened on is always accepted.
	Names []string
	// Registry is how the bound releases' registries are reached (the
	// Chain page reads the release as oa bind inspect does).
	Registry oci.OpenOptions
	// Poll is how often the live-update stream looks for a changed inbox;
	// 2 s when zero.
	Poll time.Duration
	// Operator receives the console's fault lines (never page content).
	Operator io.Writer
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Server is a console listening on its address, not yet serving.
type Server struct {
	opts   Options
	h      *host.Host
	ln     net.Listener
	tls    *tls.Config
	hosts  map[string]bool
	origin string

	mu       sync.Mutex
	token    string
	sessions map[string]*session
	// verdict is the last receipt chain check that held (History).
	verdict *keptVerdict
}

// session is one logged-in browser.
type session struct {
	id, csrf string
	expires  time.Time
}

// New checks opts and listens: an address beyond loopback without TLS
// is console_listen_unsafe, and unusable TLS files console_tls_invalid.
// It makes the single-use login token URL prints.
func New(opts Options) (*Server, error) {
	if opts.Host == nil {
		return nil, errors.New("console: no host")
	}
	if opts.Listen == "" {
		opts.Listen = "127.0.0.1:0"
	}
	if opts.Poll <= 0 {
		opts.Poll = 2 * time.Second
	}
	if opts.Operator == nil {
		opts.Operator = io.Discard
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	name, _, err := net.SplitHostPort(opts.Listen)
	if err != nil {
		return nil, blocking.New(blocking.ConsoleRequestInvalid, "--listen is HOST:PORT, as 127.0.0.1:8080")
	}
	s := &Server{opts: opts, h: opts.Host, sessions: map[string]*session{}, hosts: map[string]bool{}}
	if (opts.TLSCert == "") != (opts.TLSKey == "") {
		return nil, blocking.New(blocking.ConsoleTLSInvalid, "give --tls-cert and --tls-key together")
	}
	if opts.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(opts.TLSCert, opts.TLSKey)
		if err != nil {
			return nil, blocking.New(blocking.ConsoleTLSInvalid, "the certificate and key cannot be loaded as a pair")
		}
		s.tls = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	if !isLoopback(name) && s.tls == nil {
		return nil, blocking.New(blocking.ConsoleListenUnsafe, "listening on %q reaches beyond this machine", opts.Listen)
	}
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return nil, err
	}
	s.ln = ln
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	shown := name
	if isLoopback(name) {
		for _, n := range []string{"127.0.0.1", "localhost", "[::1]"} {
			s.hosts[n+":"+port] = true
		}
	} else if len(opts.Names) > 0 {
		shown = opts.Names[0]
	}
	if ip := net.ParseIP(name); name != "" && (ip == nil || !ip.IsUnspecified()) {
		s.hosts[strings.ToLower(net.JoinHostPort(name, port))] = true
	}
	for _, n := range opts.Names {
		s.hosts[strings.ToLower(net.JoinHostPort(n, port))] = true
		if (s.tls != nil && port == "443") || (s.tls == nil && port == "80") {
			s.hosts[strings.ToLower(n)] = true
		}
	}
	if shown == "" || net.ParseIP(shown) != nil && net.ParseIP(shown).IsUnspecified() {
		return nil, closeWith(ln, blocking.New(blocking.ConsoleRequestInvalid, "listening on every interface, give --name NAME: the name people reach the console by"))
	}
	scheme := "http"
	if s.tls != nil {
		scheme = "https"
	}
	s.origin = scheme + "://" + net.JoinHostPort(shown, port)
	if s.token, err = randomToken(); err != nil {
		ln.Close()
		return nil, err
	}
	return s, nil
}

// isLoopback reports whether name is a loopback address or localhost;
// "" (every interface) is not.
func isLoopback(name string) bool {
	if name == "localhost" {
		return true
	}
	ip := net.ParseIP(name)
	return ip != nil && ip.IsLoopback()
}

// URL is the address to open once, with the single-use login token, as
// oa console prints it.
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.origin + "/login?token=" + url.QueryEscape(s.token)
}

// Addr is the address the console listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Origin is the console's scheme and host, as pages are reached.
func (s *Server) Origin() string { return s.origin }

// Serve serves the console until ctx ends, then shuts down (waiting up to
// five seconds for open requests). Every read and write is bounded in
// time; a live-update stream extends its own write deadline.
func (s *Server) Serve(ctx context.Context) error {
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    16 << 10,
		TLSConfig:         s.tls,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	var err error
	if s.tls != nil {
		err = srv.ServeTLS(s.ln, "", "")
	} else {
		err = srv.Serve(s.ln)
	}
	<-done
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close stops listening (for a server never served).
func (s *Server) Close() error { return s.ln.Close() }

func closeWith(ln net.Listener, err error) error {
	ln.Close()
	return err
}

func randomToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// login spends the login token: a new session, or a refusal when token
// is not the token, or it was used.
func (s *Server) login(token string) (*session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.token == "" || subtle.ConstantTimeCompare([]byte(token), []byte(s.token)) != 1 {
		return nil, blocking.New(blocking.ConsoleLoginRefused, "the login token is missing, wrong or already used")
	}
	s.token = ""
	id, err := randomToken()
	if err != nil {
		return nil, err
	}
	csrf, err := randomToken()
	if err != nil {
		return nil, err
	}
	now := s.opts.Now()
	for k, v := range s.sessions {
		if now.After(v.expires) {
			delete(s.sessions, k)
		}
	}
	for len(s.sessions) >= MaxSessions {
		var oldest *session
		for _, v := range s.sessions {
			if oldest == nil || v.expires.Before(oldest.expires) {
				oldest = v
			}
		}
		delete(s.sessions, oldest.id)
	}
	sess := &session{id: id, csrf: csrf, expires: now.Add(SessionTTL)}
	s.sessions[id] = sess
	return sess, nil
}

// sessionOf is the live session of r's cookie, or nil.
func (s *Server) sessionOf(r *http.Request) *session {
	c, err := r.Cookie(CookieName)
	if err != nil || c.Value == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, sess := range s.sessions {
		if subtle.ConstantTimeCompare([]byte(id), []byte(c.Value)) == 1 {
			if s.opts.Now().After(sess.expires) {
				delete(s.sessions, id)
				return nil
			}
			return sess
		}
	}
	return nil
}

// contentSecurityPolicy allows the console's own styles and script only,
// forms posted to itself only, and no framing.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// secure wraps every request: the security headers, the Host check (no
// DNS rebinding), the session (but for the login and the static files)
// and, for a POST, the bounded body and its CSRF token.
func (s *Server) secure(next func(w http.ResponseWriter, r *http.Request, sess *session)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", contentSecurityPolicy)
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("Cross-Origin-Opener-Policy", "same-origin")
		hd.Set("Cross-Origin-Resource-Policy", "same-origin")
		hd.Set("Cache-Control", "no-store")
		if s.tls != nil {
			hd.Set("Strict-Transport-Security", "max-age=31536000")
		}
		if !s.hosts[strings.ToLower(r.Host)] {
			s.refuse(w, r, nil, http.StatusMisdirectedRequest, blocking.New(blocking.ConsoleHostRefused, "this console does not serve that host name"))
			return
		}
		if strings.HasPrefix(r.URL.Path, "/static/") {
			next(w, r, nil)
			return
		}
		if r.URL.Path == "/login" {
			s.serveLogin(w, r)
			return
		}
		sess := s.sessionOf(r)
		if sess == nil {
			s.refuse(w, r, nil, http.StatusForbidden, blocking.New(blocking.ConsoleLoginRefused, "this browser has no console session"))
			return
		}
		switch r.Method {
		case http.MethodGet, http.MethodHead:
		case http.MethodPost:
			r.Body = http.MaxBytesReader(w, r.Body, MaxBody)
			if err := parseForm(r); err != nil {
				s.refuse(w, r, sess, http.StatusBadRequest, err)
				return
			}
			if got := r.PostFormValue("csrf"); subtle.ConstantTimeCompare([]byte(got), []byte(sess.csrf)) != 1 {
				s.refuse(w, r, sess, http.StatusForbidden, blocking.New(blocking.ConsoleCSRFRefused, "the form carries no token of this session"))
				return
			}
		default:
			hd.Set("Allow", "GET, HEAD, POST")
			s.refuse(w, r, sess, http.StatusMethodNotAllowed, blocking.New(blocking.ConsoleRequestInvalid, "method %s is not served", r.Method))
			return
		}
		next(w, r, sess)
	})
}

// parseForm reads a POST's form, urlencoded or multipart, within MaxBody.
func parseForm(r *http.Request) error {
	var err error
	if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data") {
		err = r.ParseMultipartForm(MaxBody)
	} else {
		err = r.ParseForm()
	}
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return blocking.New(blocking.ConsoleRequestInvalid, "the request is over %d bytes", MaxBody)
		}
		return blocking.New(blocking.ConsoleRequestInvalid, "the form cannot be read")
	}
	return nil
}

// serveLogin spends the token of /login?token=… and sets the session
// cookie, then sends the browser to the inbox (the token leaves the
// address bar and, with no-referrer, goes nowhere).
func (s *Server) serveLogin(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		s.refuse(w, r, nil, http.StatusMethodNotAllowed, blocking.New(blocking.ConsoleRequestInvalid, "log in by opening the URL oa console printed"))
		return
	}
	sess, err := s.login(r.URL.Query().Get("token"))
	if err != nil {
		s.refuse(w, r, nil, http.StatusForbidden, err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: sess.id, Path: "/", HttpOnly: true, Secure: s.tls != nil, SameSite: http.SameSiteStrictMode, MaxAge: int(SessionTTL / time.Second)})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// refuse answers with the refusal's page: its code, title, detail and
// operator copy. A program fault is logged to the operator and shown as
// fixed copy.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, sess *session, status int, err error) {
	refusals := blocking.Refusals(err)
	if refusals == nil {
		fmt.Fprintf(s.opts.Operator, "oa console: %s %s: %v\n", r.Method, r.URL.Path, err)
		status = http.StatusInternalServerError
	}
	w.Header().Set("X-OA-Refusal", firstCode(refusals))
	s.render(w, r, sess, status, "refused", refusedPage{Refusals: shownRefusals(refusals)})
}

func firstCode(l blocking.List) string {
	if len(l) == 0 {
		return ""
	}
	return string(l[0].Code)
}
