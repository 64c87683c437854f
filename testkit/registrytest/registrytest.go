// Package registrytest runs an in-process OCI distribution registry
// (github.com/distribution/distribution/v3, in-memory storage, deletes
// enabled) on a loopback port, for tests and benchmarks only. It counts
// the requests it serves and the response bytes it writes.
package registrytest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distribution/distribution/v3/configuration"
	// The htpasswd access controller registers itself here.
	_ "github.com/distribution/distribution/v3/registry/auth/htpasswd"
	"github.com/distribution/distribution/v3/registry/handlers"
	// The in-memory storage driver registers itself here; handlers does
	// not import it, and NewApp panics without it.
	_ "github.com/distribution/distribution/v3/registry/storage/driver/inmemory"
	"github.com/sirupsen/logrus"
	"golang.org/x/crypto/bcrypt"
	"oras.land/oras-go/v2/registry/remote"
)

// config is the registry configuration: in-memory storage, manifest
// deletes allowed (oras-go's referrers tag scheme and cosign-tag cleanup
// need them), no upload purging, and a fixed HTTP secret so the registry
// does not warn about a random one.
const config = `
version: 0.1
log:
  level: error
  accesslog:
    disabled: true
storage:
  inmemory: {}
  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: 127.0.0.1:0
  secret: registrytest-not-a-secret
`

// Options are the settings of StartWith.
type Options struct {
	// TLS serves HTTPS with a self-signed certificate for 127.0.0.1 made
	// for this registry; CAFile is its PEM.
	TLS bool
	// Users turns on distribution's htpasswd authentication with these
	// user names and passwords (bcrypt-hashed into a file the test owns).
	Users map[string]string
}

// Registry is a running in-process registry.
type Registry struct {
	// CAFile is the PEM of the self-signed certificate of a TLS registry;
	// empty for plain HTTP.
	CAFile string
	// forbidden are repositories every request for is denied with 403, as
	// an authorization layer in front of a registry denies them.
	forbidden sync.Map
	tls       *tls.Config
	mu        sync.Mutex
	srv       *httptest.Server
	handler   http.Handler
	addr      string
	stopped   bool
	down      bool
	requests  atomic.Int64
	bytes     atomic.Int64
	// downAt, when positive, is the request count at which the registry
	// goes down (DownAfter).
	downAt atomic.Int64
	// current is srv, readable by handlers without the lock (which Down
	// holds while it waits for them).
	current atomic.Pointer[httptest.Server]
	// lie, when set, answers the requests it claims before the registry
	// sees them (Lie).
	lie atomic.Pointer[LieFunc]
}

// LieFunc answers a request in place of the registry, as a hostile or
// broken registry would, and reports whether it did; false passes the
// request on to the real registry.
type LieFunc func(w http.ResponseWriter, req *http.Request) bool

// Lie makes the registry answer requests with f first (nil stops lying):
// for tests of clients against a registry that misstates sizes, streams
// without end or sends other bytes than it stores.
func (r *Registry) Lie(f LieFunc) {
	if f == nil {
		r.lie.Store(nil)
		return
	}
	r.lie.Store(&f)
}

// quietLog drops the server's own log lines (TLS handshakes that tests
// make fail on purpose).
var quietLog = log.New(io.Discard, "", 0)

// quietOnce silences the registry's logging, which goes to logrus's
// standard logger whatever the configuration says.
var quietOnce sync.Once

// Start starts a registry on 127.0.0.1 and stops it when t ends. It fails
// t when the registry cannot start. REGISTRY_* environment variables
// override the configuration, as in the stock registry.
func Start(t testing.TB) *Registry { return StartWith(t, Options{}) }

// StartWith is Start with TLS and authentication as opts say.
func StartWith(t testing.TB, opts Options) *Registry {
	t.Helper()
	quietOnce.Do(func() {
		logrus.SetOutput(io.Discard)
		logrus.SetLevel(logrus.PanicLevel)
	})
	text := config
	if len(opts.Users) > 0 {
		text += htpasswdConfig(t, opts.Users)
	}
	cfg, err := configuration.Parse(strings.NewReader(text))
	if err != nil {
		t.Fatalf("registrytest: parsing configuration: %v", err)
	}
	r := &Registry{}
	app := handlers.NewApp(context.Background(), cfg)
	r.handler = r.count(r.deny(app))
	r.srv = httptest.NewUnstartedServer(r.handler)
	r.srv.Config.ErrorLog = quietLog
	if opts.TLS {
		r.tls, r.CAFile = selfSigned(t)
		r.srv.TLS = r.tls.Clone()
		r.srv.StartTLS()
	} else {
		r.srv.Start()
	}
	r.current.Store(r.srv)
	r.addr = r.srv.Listener.Addr().String()
	t.Cleanup(r.Stop)
	return r
}

// Host is the registry's "127.0.0.1:PORT"; it stays the same across Down
// and Up.
func (r *Registry) Host() string { return r.addr }

// Repository opens repository name ("oa/clinic") on the registry over
// plain HTTP (a TLS or authenticating registry needs oci.Open with its
// options). It fails t when name is not a valid repository name.
func (r *Registry) Repository(t testing.TB, name string) *remote.Repository {
	t.Helper()
	repo, err := remote.NewRepository(r.Host() + "/" + name)
	if err != nil {
		t.Fatalf("registrytest: repository %q: %v", name, err)
	}
	repo.PlainHTTP = true
	return repo
}

// Forbid makes every request for repository name ("oa/clinic") a 403
// DENIED, as a registry's authorization layer answers an account that may
// not use it.
func (r *Registry) Forbid(name string) { r.forbidden.Store(name, true) }

// deny wraps h so that requests for a forbidden repository get 403.
func (r *Registry) deny(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if name, ok := strings.CutPrefix(req.URL.Path, "/v2/"); ok {
			for _, sep := range []string{"/manifests/", "/blobs/", "/tags/", "/referrers/"} {
				if repo, _, found := strings.Cut(name, sep); found {
					if _, no := r.forbidden.Load(repo); no {
						w.Header().Set("Content-Type", "application/json")
						w.WriteHeader(http.StatusForbidden)
						_, _ = io.WriteString(w, `{"errors":[{"code":"DENIED","message":"requested access to the resource is denied"}]}`)
						return
					}
					break
				}
			}
		}
		h.ServeHTTP(w, req)
	})
}

// Stop shuts the registry down. It is safe to call more than once; Start
// arranges for it to be called when the test ends.
func (r *Registry) Stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.stopped {
		r.stopped = true
		if !r.down {
			r.srv.Close()
		}
	}
}

// Down takes the registry off the network, as if its process had stopped:
// connections are refused until Up. Its storage is kept.
func (r *Registry) Down() { r.downIf(nil) }

// downIf is Down, but only while the registry is served by srv (any
// server when srv is nil): a cut that fires late never takes down the
// server that replaced the one it was meant for.
func (r *Registry) downIf(srv *httptest.Server) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped || r.down || srv != nil && srv != r.srv {
		return
	}
	r.down = true
	r.srv.CloseClientConnections()
	r.srv.Close()
}

// Up brings a registry that is Down back on the same address with the
// same storage, as if its process had restarted.
func (r *Registry) Up(t testing.TB) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped || !r.down {
		return
	}
	l, err := net.Listen("tcp", r.addr)
	if err != nil {
		t.Fatalf("registrytest: listening again on %s: %v", r.addr, err)
	}
	srv := httptest.NewUnstartedServer(r.handler)
	srv.Listener.Close()
	srv.Listener = l
	srv.Config.ErrorLog = quietLog
	if r.tls != nil {
		srv.TLS = r.tls.Clone()
		srv.StartTLS()
	} else {
		srv.Start()
	}
	r.srv, r.down = srv, false
	r.current.Store(srv)
	r.downAt.Store(0)
}

// DownAfter makes the registry go Down once it has served n more
// requests: a registry that stops in the middle of a client's work.
func (r *Registry) DownAfter(n int64) { r.downAt.Store(r.requests.Load() + n) }

// CancelDown withdraws a DownAfter that has not fired yet.
func (r *Registry) CancelDown() { r.downAt.Store(0) }

// Requests is the number of HTTP requests served so far.
func (r *Registry) Requests() int64 { return r.requests.Load() }

// BytesServed is the number of response body bytes written so far.
func (r *Registry) BytesServed() int64 { return r.bytes.Load() }

// ResetCounters sets Requests and BytesServed back to zero.
func (r *Registry) ResetCounters() {
	r.requests.Store(0)
	r.bytes.Store(0)
}

// count wraps h so that every request and every body byte is counted.
func (r *Registry) count(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		n := r.requests.Add(1)
		if at := r.downAt.Load(); at > 0 && n > at {
			// Past the cut: drop the connection, as a stopped process would.
			go r.downIf(r.current.Load())
			panic(http.ErrAbortHandler)
		}
		cw := &countingWriter{ResponseWriter: w, n: &r.bytes}
		if lie := r.lie.Load(); lie != nil && (*lie)(cw, req) {
			return
		}
		h.ServeHTTP(cw, req)
	})
}

// countingWriter counts the body bytes written through it.
type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

// Write counts and forwards b.
func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.ResponseWriter.Write(b)
	c.n.Add(int64(n))
	return n, err
}

// Flush forwards to the underlying writer when it can flush.
func (c *countingWriter) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the underlying writer.
func (c *countingWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// htpasswdConfig writes users to an htpasswd file (bcrypt, as
// distribution requires) and returns the auth section naming it.
func htpasswdConfig(t testing.TB, users map[string]string) string {
	t.Helper()
	var b strings.Builder
	for name, pass := range users {
		hash, err := bcrypt.GenerateFromPassword([]byte(pass), bcrypt.MinCost)
		if err != nil {
			t.Fatalf("registrytest: hashing a password: %v", err)
		}
		fmt.Fprintf(&b, "%s:%s\n", name, hash)
	}
	path := filepath.Join(t.TempDir(), "htpasswd")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatalf("registrytest: writing htpasswd: %v", err)
	}
	return fmt.Sprintf("auth:\n  htpasswd:\n    realm: registrytest\n    path: %q\n", path)
}

// selfSigned makes a self-signed certificate for 127.0.0.1 and
// localhost, valid for a day, and writes its PEM to a file the test owns.
func selfSigned(t testing.TB) (*tls.Config, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("registrytest: generating a key: %v", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "registrytest"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatalf("registrytest: making a certificate: %v", err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	path := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(path, certPEM, 0o600); err != nil {
		t.Fatalf("registrytest: writing the certificate: %v", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS12}, path
}
