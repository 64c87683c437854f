package oci

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"
	"oras.land/oras-go/v2/registry/remote/errcode"
	"oras.land/oras-go/v2/registry/remote/retry"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/schemas"
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
	pem, err := schemas.ReadLocalFile(caFile, maxCAFile)
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

// speaksPlainHTTP reports whether the loopback registry at hostport
// answers a TLS handshake with plain HTTP: the scheme of a registry given
// none is found once per process by that one handshake (no HTTP request),
// then remembered. Any other outcome means HTTPS, whose own errors the
// requests then report.
func speaksPlainHTTP(ctx context.Context, hostport string) bool {
	if v, ok := schemes.Load(hostport); ok {
		return v.(bool)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
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
	return plain
}

// registryClient is the remote.Client of one repository: it sends through
// the shared auth client and turns transport failures and 401/403 answers
// into refusals that name only the registry host.
type registryClient struct {
	inner *auth.Client
	host  string
}

// Do sends req.
func (c *registryClient) Do(req *http.Request) (*http.Response, error) {
	resp, err := c.inner.Do(req)
	if err != nil {
		return nil, classify(err, c.host)
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		resp.Body.Close()
		return nil, blocking.New(blocking.RegistryUnauthorized, "%s refused the credentials (or none were found for it)", c.host)
	case http.StatusForbidden:
		resp.Body.Close()
		return nil, blocking.New(blocking.RegistryForbidden, "%s denies this account access to the repository", c.host)
	}
	return resp, nil
}

// classify turns a transport or auth failure into a refusal naming the
// host only; anything it does not recognize is returned as it is (a
// fault).
func classify(err error, host string) error {
	if blocking.Refusals(err) != nil {
		return err
	}
	var resp *errcode.ErrorResponse
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	var record tls.RecordHeaderError
	var alert tls.AlertError
	var dns *net.DNSError
	var op *net.OpError
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
	}
	return err
}
