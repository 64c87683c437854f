package oci

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"
	"oras.land/oras-go/v2/registry/remote/errcode"
	"oras.land/oras-go/v2/registry/remote/retry"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/internal/boundedfile"
)

// maxCAFile bounds a --ca-file read: a bundle of a few hundred
// certificates, not an arbitrary file.
const maxCAFile = 1 << 20

// transportKey names one way of reaching registries: one pooled HTTP
// transport and auth client exist per key in a process, so every
// repository opened the same way shares connections and tokens.
type transportKey struct {
	caFile   string
	insecure bool
	store    credentials.Store
}

var (
	clientsMu sync.Mutex
	clients   = map[transportKey]*auth.Client{}
	// schemes remembers, per loopback host given no scheme, whether it
	// speaks plain HTTP (see speaksPlainHTTP).
	schemes sync.Map
)

// authClient returns the process's auth client for key, made on first
// use: a retrying client over one pooled transport whose TLS settings
// are key's, with the Docker config's credentials (as oras).
func authClient(key transportKey) (*auth.Client, error) {
	clientsMu.Lock()
	defer clientsMu.Unlock()
	if c, ok := clients[key]; ok {
		return c, nil
	}
	tlsConfig, err := tlsConfigFor(key.caFile, key.insecure)
	if err != nil {
		return nil, err
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.TLSClientConfig = tlsConfig
	// Fleet publishing and concurrent uploads keep many requests to one
	// registry in flight; the default of 2 idle connections per host would
	// close and redial most of them.
	base.MaxIdleConnsPerHost = 64
	base.MaxIdleConns = 256
	base.IdleConnTimeout = 90 * time.Second
	store := key.store
	if store == nil {
		// The Docker config (~/.docker/config.json, or $DOCKER_CONFIG), as
		// `docker login` and `oras login` write it.
		if store, err = credentials.NewStoreFromDocker(credentials.StoreOptions{}); err != nil {
			return nil, fmt.Errorf("reading Docker credentials: %w", err)
		}
	}
	c := &auth.Client{
		Client:     &http.Client{Transport: retry.NewTransport(base)},
		Cache:      auth.NewCache(),
		Credential: credentials.Credential(store),
	}
	c.SetUserAgent("oa")
	clients[key] = c
	return c, nil
}

// tlsConfigFor is the TLS configuration for a private CA file (added to
// the system roots) and for --insecure (no verification, for self-signed
// test registries).
func tlsConfigFor(caFile string, insecure bool) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: insecure} //nolint:gosec // --insecure asks for exactly this
	if caFile == "" {
		return cfg, nil
	}
	pem, err := boundedfile.ReadRegular(caFile, maxCAFile)
	if err != nil {
		return nil, blocking.New(blocking.RegistryCAInvalid, "the --ca-file cannot be read")
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, blocking.New(blocking.RegistryCAInvalid, "the --ca-file holds no PEM certificate")
	}
	cfg.RootCAs = pool
	return cfg, nil
}

// probeTimeout bounds the loopback scheme probe's TLS handshake: a
// registry on this machine answers one at once, or is stalled.
const probeTimeout = 5 * time.Second

// speaksPlainHTTP reports whether the loopback registry at hostport
// answers a TLS handshake with plain HTTP: the scheme of a registry given
// none is found once per process by that one handshake (no HTTP request),
// then remembered. A registry that accepts the connection but does not
// finish the handshake within timeout (or probeTimeout, if shorter) is
// refused registry_timeout; any other outcome means HTTPS, whose own
// errors the requests then report.
func speaksPlainHTTP(ctx context.Context, hostport string, timeout time.Duration) (bool, error) {
	if v, ok := schemes.Load(hostport); ok {
		return v.(bool), nil
	}
	ctx, cancel := context.WithTimeout(ctx, min(timeout, probeTimeout))
	defer cancel()
	d := tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}} //nolint:gosec // a scheme probe only; requests verify
	conn, err := d.DialContext(ctx, "tcp", hostport)
	var record tls.RecordHeaderError
	plain := err != nil && errors.As(err, &record)
	if err == nil {
		conn.Close()
	}
	if err == nil || plain {
		schemes.Store(hostport, plain)
	}
	if err != nil && !plain && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return false, blocking.New(blocking.RegistryTimeout, "%s accepted a connection but did not answer a TLS handshake within %s", hostport, min(timeout, probeTimeout))
	}
	return plain, nil
}

// registryClient is the remote.Client of one repository: it sends through
// the shared auth client, holds every request to the request timeout and
// the operation's deadline (body included), and turns transport failures,
// timeouts and 401/403 answers into refusals that name only the registry
// host.
type registryClient struct {
	inner *auth.Client
	host  string
	// request bounds one request, from dialling to the last body byte;
	// operation is the operation timeout, whose deadline is deadline.
	request, operation time.Duration
	deadline           time.Time
	// metadataBytes bounds a referrers answer (oras-go cuts it off there
	// without saying why).
	metadataBytes int64
}

// Errors a request's context is cancelled with when a timeout fires.
var (
	errRequestTimeout   = errors.New("registry request timeout")
	errOperationTimeout = errors.New("registry operation timeout")
)

// Do sends req.
func (c *registryClient) Do(req *http.Request) (*http.Response, error) {
	if !time.Now().Before(c.deadline) {
		return nil, c.timeout(errOperationTimeout)
	}
	ctx, cancelRequest := context.WithTimeoutCause(req.Context(), c.request, errRequestTimeout)
	ctx, cancelOperation := context.WithDeadlineCause(ctx, c.deadline, errOperationTimeout)
	cancel := func() { cancelOperation(); cancelRequest() }
	resp, err := c.inner.Do(req.WithContext(ctx))
	if err != nil {
		cause := context.Cause(ctx)
		cancel()
		if r := c.timeout(cause); r != nil {
			return nil, r
		}
		return nil, classify(err, c.host)
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		resp.Body.Close()
		cancel()
		return nil, blocking.New(blocking.RegistryUnauthorized, "%s refused the credentials (or none were found for it)", c.host)
	case http.StatusForbidden:
		resp.Body.Close()
		cancel()
		return nil, blocking.New(blocking.RegistryForbidden, "%s denies this account access to the repository", c.host)
	}
	body := &timedBody{ReadCloser: resp.Body, ctx: ctx, cancel: cancel, client: c}
	if req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/referrers/") {
		// oras-go reads a referrers answer to at most metadataBytes and
		// then reports a truncated document, not an oversized one (a
		// manifest's size it checks before reading): reading past the
		// limit says which.
		body.limit = c.metadataBytes
	}
	resp.Body = body
	return resp, nil
}

// timeout is the refusal for a request cancelled with cause, or nil when
// no timeout of this client fired.
func (c *registryClient) timeout(cause error) error {
	switch {
	case errors.Is(cause, errOperationTimeout):
		return blocking.New(blocking.RegistryTimeout, "the work with %s did not finish within the operation timeout of %s", c.host, c.operation)
	case errors.Is(cause, errRequestTimeout):
		return blocking.New(blocking.RegistryTimeout, "%s did not finish answering a request within the request timeout of %s", c.host, c.request)
	}
	return nil
}

// timedBody is a response body read under its request's deadlines: a
// read that fails because one fired is that timeout's refusal, and
// closing the body releases the request's timers. With a limit, reading
// past it is manifest_too_large (not a truncated document).
type timedBody struct {
	io.ReadCloser
	ctx    context.Context
	cancel func()
	client *registryClient
	limit  int64
	read   int64
}

// Read reads from the body.
func (b *timedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.read += int64(n)
	if err != nil && err != io.EOF {
		if r := b.client.timeout(context.Cause(b.ctx)); r != nil {
			return n, r
		}
	}
	if b.limit > 0 && b.read >= b.limit && err == nil {
		// The reader above stops at the limit and never asks for more:
		// one more byte says whether the answer is longer.
		var one [1]byte
		if m, _ := io.ReadFull(b.ReadCloser, one[:]); m > 0 {
			return n, blocking.New(blocking.ManifestTooLarge, "the referrers answer of %s is over the limit of %d bytes; raise limits.manifest_bytes in the host policy if it is genuine", b.client.host, b.limit)
		}
	}
	return n, err
}

// Close closes the body and releases its request's deadlines.
func (b *timedBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// classify turns a transport or auth failure into a refusal naming the
// host only, keeping the transport's error as its Cause (for the
// operator's oa --debug, never shown to an agent); anything it does not
// recognize is returned as it is (a fault).
func classify(err error, host string) error {
	if blocking.Refusals(err) != nil {
		return err
	}
	r := classifyRefusal(err, host)
	if r == nil {
		return err
	}
	if r.Cause == nil {
		r.Cause = err
	}
	return r
}

func classifyRefusal(err error, host string) *blocking.Error {
	var resp *errcode.ErrorResponse
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	var record tls.RecordHeaderError
	var alert tls.AlertError
	var dns *net.DNSError
	var op *net.OpError
	var timeout net.Error
	switch {
	case errors.Is(err, auth.ErrBasicCredentialNotFound):
		return blocking.New(blocking.RegistryUnauthorized, "no credentials for %s", host)
	case errors.As(err, &resp) && resp.StatusCode == http.StatusUnauthorized:
		return blocking.New(blocking.RegistryUnauthorized, "%s refused the credentials (or none were found for it)", host)
	case errors.As(err, &resp) && resp.StatusCode == http.StatusForbidden:
		return blocking.New(blocking.RegistryForbidden, "%s denies this account access to the repository", host)
	case errors.Is(err, http.ErrSchemeMismatch):
		return blocking.New(blocking.RegistryUnreachable, "%s answers plain HTTP, not HTTPS", host)
	case errors.As(err, &unknownCA) || errors.As(err, &hostname) || errors.As(err, &invalid) || errors.As(err, &verify):
		return blocking.New(blocking.RegistryTLSUntrusted, "the certificate of %s does not verify", host)
	case errors.As(err, &record) || errors.As(err, &alert):
		return blocking.New(blocking.RegistryTLSUntrusted, "the TLS handshake with %s failed", host)
	case errors.As(err, &dns) || errors.As(err, &op):
		return blocking.New(blocking.RegistryUnreachable, "%s cannot be reached", host)
	case errors.As(err, &timeout) && timeout.Timeout():
		// The transport's own deadlines (the TLS handshake's): the host
		// accepted the connection but did not answer in time.
		return blocking.New(blocking.RegistryTimeout, "%s accepted the connection but did not answer in time", host)
	}
	return nil
}

// transportRefusal returns err when it is a refusal about reaching the
// registry (a timeout, credentials, the network): one that says nothing
// about the content asked for, so a reader that skips bad content must
// not skip it. Nil otherwise.
func transportRefusal(err error) error {
	for _, r := range blocking.Refusals(err) {
		switch r.Code {
		case blocking.RegistryTimeout, blocking.RegistryUnauthorized, blocking.RegistryForbidden,
			blocking.RegistryUnreachable, blocking.RegistryTLSUntrusted:
			return err
		}
	}
	return nil
}
