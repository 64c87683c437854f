package oci

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/testkit/registrytest"
)

// roundTrip pushes a small manifest under a tag to host/repo with opts
// and resolves it back: every request kind a command makes (blob HEAD
// and upload, manifest PUT, manifest HEAD).
func roundTrip(t *testing.T, host, repo string, opts OpenOptions) error {
	t.Helper()
	ctx := context.Background()
	ref, err := ParseRef(host+"/"+repo+":t", RefOptions{})
	if err != nil {
		t.Fatal(err)
	}
	target, err := Open(ctx, ref, opts)
	if err != nil {
		return err
	}
	if _, err := PushIfMissing(ctx, target, ocispec.DescriptorEmptyJSON, ocispec.DescriptorEmptyJSON.Data); err != nil {
		return err
	}
	m := `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","artifactType":"application/vnd.oa.test","config":{"mediaType":"application/vnd.oci.empty.v1+json","digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","size":2},"layers":[{"mediaType":"application/vnd.oci.empty.v1+json","digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","size":2}]}`
	if _, err := oras.TagBytes(ctx, target, ocispec.MediaTypeImageManifest, []byte(m), "t"); err != nil {
		return err
	}
	_, err = Resolve(ctx, target, "t")
	return err
}

// wantRegistryCode fails t unless err is exactly one refusal with code, whose
// text names the host but none of the transport's own words.
func wantRegistryCode(t *testing.T, err error, code blocking.Code, host string) {
	t.Helper()
	rs := blocking.Refusals(err)
	if len(rs) != 1 || rs[0].Code != code {
		t.Fatalf("want %s, got %v", code, err)
	}
	if !strings.Contains(rs[0].Detail, host) {
		t.Fatalf("the refusal does not name the host: %v", rs[0])
	}
	// The host itself may hold any digits (a random port can read 40373),
	// so it is taken out before looking for the transport's words.
	text := strings.ReplaceAll(rs[0].Error(), host, "HOST")
	for _, raw := range []string{"basic credential", "401", "403", "x509", "tls:", "dial tcp", "connection refused", "http://", "https://", "/v2/"} {
		if strings.Contains(text, raw) {
			t.Fatalf("raw transport text %q in %v", raw, rs[0])
		}
	}
}

func TestTLSRegistry(t *testing.T) {
	r := registrytest.StartWith(t, registrytest.Options{TLS: true})
	// Loopback without a scheme tries HTTPS first: the self-signed
	// certificate is not trusted.
	wantRegistryCode(t, roundTrip(t, r.Host(), "oa/tls", OpenOptions{}), blocking.RegistryTLSUntrusted, r.Host())
	wantRegistryCode(t, roundTrip(t, r.Host(), "oa/tls", OpenOptions{HTTPS: true}), blocking.RegistryTLSUntrusted, r.Host())
	if err := roundTrip(t, r.Host(), "oa/tls", OpenOptions{CAFile: r.CAFile}); err != nil {
		t.Fatalf("--ca-file: %v", err)
	}
	if err := roundTrip(t, r.Host(), "oa/tls", OpenOptions{Insecure: true, HTTPS: true}); err != nil {
		t.Fatalf("--insecure: %v", err)
	}
}

func TestCAFileInvalid(t *testing.T) {
	r := registrytest.StartWith(t, registrytest.Options{TLS: true})
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.pem")
	if err := os.WriteFile(junk, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{junk, filepath.Join(dir, "missing.pem"), dir} {
		err := roundTrip(t, r.Host(), "oa/tls", OpenOptions{CAFile: path})
		rs := blocking.Refusals(err)
		if len(rs) != 1 || rs[0].Code != blocking.RegistryCAInvalid || strings.Contains(rs[0].Error(), dir) {
			t.Fatalf("%s: %v", filepath.Base(path), err)
		}
	}
}

func TestPlainHTTPRegistry(t *testing.T) {
	r := registrytest.Start(t)
	// A loopback registry given no scheme falls back from HTTPS to HTTP.
	if err := roundTrip(t, r.Host(), "oa/plain", OpenOptions{}); err != nil {
		t.Fatalf("fallback: %v", err)
	}
	if err := roundTrip(t, r.Host(), "oa/plain", OpenOptions{PlainHTTP: true}); err != nil {
		t.Fatalf("--plain-http: %v", err)
	}
	// An explicit HTTPS choice is honoured: no fallback.
	wantRegistryCode(t, roundTrip(t, r.Host(), "oa/plain", OpenOptions{HTTPS: true}), blocking.RegistryUnreachable, r.Host())
}

func TestRegistryUnreachable(t *testing.T) {
	r := registrytest.Start(t)
	host := r.Host()
	r.Stop()
	wantRegistryCode(t, roundTrip(t, host, "oa/gone", OpenOptions{}), blocking.RegistryUnreachable, host)
	wantRegistryCode(t, roundTrip(t, host, "oa/gone", OpenOptions{PlainHTTP: true}), blocking.RegistryUnreachable, host)
}

func TestRegistryCredentials(t *testing.T) {
	r := registrytest.StartWith(t, registrytest.Options{TLS: true, Users: map[string]string{"alice": "s3cret-pass"}})
	none := credentials.NewMemoryStore()
	wantRegistryCode(t, roundTrip(t, r.Host(), "oa/auth", OpenOptions{CAFile: r.CAFile, Credentials: none}), blocking.RegistryUnauthorized, r.Host())
	wrong := credentials.NewMemoryStore()
	if err := wrong.Put(context.Background(), r.Host(), auth.Credential{Username: "alice", Password: "wrong"}); err != nil {
		t.Fatal(err)
	}
	err := roundTrip(t, r.Host(), "oa/auth", OpenOptions{CAFile: r.CAFile, Credentials: wrong})
	wantRegistryCode(t, err, blocking.RegistryUnauthorized, r.Host())
	if strings.Contains(err.Error(), "wrong") || strings.Contains(err.Error(), "alice") {
		t.Fatalf("credentials in the refusal: %v", err)
	}
	right := credentials.NewMemoryStore()
	if err := right.Put(context.Background(), r.Host(), auth.Credential{Username: "alice", Password: "s3cret-pass"}); err != nil {
		t.Fatal(err)
	}
	if err := roundTrip(t, r.Host(), "oa/auth", OpenOptions{CAFile: r.CAFile, Credentials: right}); err != nil {
		t.Fatalf("right credentials: %v", err)
	}
	r.Forbid("oa/denied")
	wantRegistryCode(t, roundTrip(t, r.Host(), "oa/denied", OpenOptions{CAFile: r.CAFile, Credentials: right}), blocking.RegistryForbidden, r.Host())
}
