package signing

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/testkit/interoptest"
)

// Interop with the stock cosign CLI, at the version pinned as a tool in
// go.mod (v2.6.5): interoptest builds it when OA_COSIGN does not name one.

// csCosign is a stock cosign CLI with an isolated, offline environment.
type csCosign struct {
	bin string
	env []string
	dir string
}

// csNeedCosign returns the cosign CLI with an isolated, offline
// environment.
func csNeedCosign(t testing.TB) *csCosign {
	t.Helper()
	bin := interoptest.Tool(t, "cosign")
	dir := t.TempDir()
	env := []string{
		"HOME=" + dir,
		"TUF_ROOT=" + filepath.Join(dir, "tuf"),
		"DOCKER_CONFIG=" + filepath.Join(dir, "docker"),
		// Any SIGSTORE_* trust file setting, even a missing one, stops
		// cosign from fetching the public-good TUF root.
		"SIGSTORE_REKOR_PUBLIC_KEY=/nonexistent",
		"COSIGN_PASSWORD=" + csPassword,
	}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k == "PATH" || k == "TMPDIR" {
			env = append(env, kv)
		}
	}
	return &csCosign{bin: bin, env: env, dir: dir}
}

// run runs cosign with args and returns its combined output.
func (c *csCosign) run(args ...string) (string, error) {
	cmd := exec.Command(c.bin, args...)
	cmd.Env, cmd.Dir = c.env, c.dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// must runs cosign and fails t when it does not succeed.
func (c *csCosign) must(t testing.TB, args ...string) string {
	t.Helper()
	out, err := c.run(args...)
	if err != nil {
		t.Fatalf("cosign %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// file writes b under the cosign work dir and returns its path.
func (c *csCosign) file(t testing.TB, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(c.dir, name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// interop is what both cosign interop tests start from: an in-process
// registry, the publisher's and authority's key pairs, and their key
// files (and another publisher's public key) where cosign reads them.
type interop struct {
	st                                         csStore
	pub, auth                                  csKeyPair
	pubKey, pubPub, authKey, authPub, otherPub string
}

func newInterop(t *testing.T, cs *csCosign) interop {
	f := interop{st: csRegistry(t), pub: csKey(t, 0), auth: csKey(t, 1)}
	f.pubKey, f.pubPub = cs.file(t, "publisher.key", f.pub.priv), cs.file(t, "publisher.pub", f.pub.pub)
	f.authKey, f.authPub = cs.file(t, "authority.key", f.auth.priv), cs.file(t, "authority.pub", f.auth.pub)
	f.otherPub = cs.file(t, "other.pub", csKey(t, 2).pub)
	return f
}

// ref is the digest reference of d in the test registry.
func (f interop) ref(d ocispec.Descriptor) string { return f.st.repo + "@" + d.Digest.String() }

// TestCosignInterop checks both directions against the stock cosign CLI on
// an in-process registry.
func TestCosignInterop(t *testing.T) {
	cs := csNeedCosign(t)
	f := newInterop(t, cs)
	st, pub, auth, ref := f.st, f.pub, f.auth, f.ref
	pubKey, pubPub, authKey, authPub, otherPub := f.pubKey, f.pubPub, f.authKey, f.authPub, f.otherPub
	ctx := context.Background()

	t.Run("cosign verifies Sign", func(t *testing.T) {
		a := csPushWorker(t, st.target, "oa-signed")
		if _, err := Sign(ctx, st.target, a, WriteOptions{Signer: pub.signer, Repository: st.repo}); err != nil {
			t.Fatal(err)
		}
		out := cs.must(t, "verify", "--key", pubPub, "--insecure-ignore-tlog", ref(a))
		if !strings.Contains(out, a.Digest.String()) {
			t.Fatalf("cosign verify output lacks the digest:\n%s", out)
		}
		if out, err := cs.run("verify", "--key", otherPub, "--insecure-ignore-tlog", ref(a)); err == nil {
			t.Fatalf("cosign verify accepted another key:\n%s", out)
		}
	})

	t.Run("cosign verifies Attest", func(t *testing.T) {
		a := csPushWorker(t, st.target, "oa-attested")
		if _, err := Attest(ctx, st.target, a, ConformancePredicateType, []byte(csPredicate), WriteOptions{Signer: auth.signer, Repository: st.repo}); err != nil {
			t.Fatal(err)
		}
		cs.must(t, "verify-attestation", "--key", authPub, "--type", ConformancePredicateType, "--insecure-ignore-tlog", ref(a))
		if out, err := cs.run("verify-attestation", "--key", authPub, "--type", "https://example.com/other/v1", "--insecure-ignore-tlog", ref(a)); err == nil {
			t.Fatalf("cosign verify-attestation accepted another type:\n%s", out)
		}
	})

	t.Run("VerifySignature accepts cosign sign", func(t *testing.T) {
		a := csPushWorker(t, st.target, "cosign-signed")
		cs.must(t, "sign", "--key", pubKey, "--tlog-upload=false", "-y", ref(a))
		res, err := VerifySignature(ctx, st.target, a, pub.verifier)
		if err != nil || res.Verified != 1 {
			t.Fatalf("%+v, %v", res, err)
		}
		csSameAsCosign(t, st, oci.SignatureTag(a.Digest))
		// Sign dedupes cosign's signature by the same key, and cosign
		// appends to (and dedupes) ours.
		if _, err := Sign(ctx, st.target, a, WriteOptions{Signer: pub.signer, Repository: st.repo}); err != nil {
			t.Fatal(err)
		}
		if _, m := csManifest(t, st.target, oci.SignatureTag(a.Digest)); len(m.Layers) != 1 {
			t.Fatalf("Sign duplicated cosign's signature: %d layers", len(m.Layers))
		}
		if _, err := Sign(ctx, st.target, a, WriteOptions{Signer: auth.signer, Repository: st.repo}); err != nil {
			t.Fatal(err)
		}
		cs.must(t, "verify", "--key", pubPub, "--insecure-ignore-tlog", ref(a))
		cs.must(t, "verify", "--key", authPub, "--insecure-ignore-tlog", ref(a))
	})

	t.Run("VerifyAttestation accepts cosign attest", func(t *testing.T) {
		a := csPushWorker(t, st.target, "cosign-attested")
		pred := cs.file(t, "predicate.json", []byte(csPredicate+"\n"))
		cs.must(t, "attest", "--key", authKey, "--tlog-upload=false", "-y", "--type", ConformancePredicateType, "--predicate", pred, ref(a))
		res, err := VerifyAttestation(ctx, st.target, a, auth.verifier, ConformancePredicateType, WithPublisher(pub.verifier))
		if err != nil {
			t.Fatal(err)
		}
		var got, want any
		if json.Unmarshal(res.Predicate, &got) != nil || json.Unmarshal([]byte(csPredicate), &want) != nil || !csJSONEqual(got, want) {
			t.Fatalf("predicate %s; want %s", res.Predicate, csPredicate)
		}
		csSameAsCosign(t, st, oci.AttestationTag(a.Digest))
	})

	t.Run("keys interoperate", func(t *testing.T) {
		cs.must(t, "generate-key-pair", "--output-key-prefix", "generated")
		priv, err := os.ReadFile(filepath.Join(cs.dir, "generated.key"))
		if err != nil {
			t.Fatal(err)
		}
		pubPEM, err := os.ReadFile(filepath.Join(cs.dir, "generated.pub"))
		if err != nil {
			t.Fatal(err)
		}
		s, err := LoadSigner(priv, []byte(csPassword))
		if err != nil {
			t.Fatal(err)
		}
		v, err := LoadVerifier(pubPEM)
		if err != nil || v.KeyID() != s.KeyID() {
			t.Fatalf("cosign's public key: %v (ids %s vs %s)", err, v.KeyID(), s.KeyID())
		}
		a := csPushWorker(t, st.target, "cosign-keys")
		if _, err := Sign(ctx, st.target, a, WriteOptions{Signer: s, Repository: st.repo}); err != nil {
			t.Fatal(err)
		}
		cs.must(t, "verify", "--key", filepath.Join(cs.dir, "generated.pub"), "--insecure-ignore-tlog", ref(a))
		// cosign signs with a key GenerateKeys made (publisher.key) in the
		// "VerifySignature accepts cosign sign" case above.
	})
}

// csSameAsCosign checks the manifest and config cosign wrote under tag are
// byte for byte what cosignManifest and cosignConfig render from its
// layers.
func csSameAsCosign(t *testing.T, st csStore, tag string) {
	t.Helper()
	desc, m := csManifest(t, st.target, tag)
	cfg, err := cosignConfig(m.Layers)
	if err != nil {
		t.Fatal(err)
	}
	if got := csBlob(t, st.target, m.Config); !bytes.Equal(got, cfg) {
		t.Fatalf("cosign's config differs from ours:\n%s\n%s", got, cfg)
	}
	mb, err := cosignManifest(m.Config, m.Layers)
	if err != nil {
		t.Fatal(err)
	}
	if got := csBlob(t, st.target, desc); !bytes.Equal(got, mb) {
		t.Fatalf("cosign's manifest differs from ours:\n%s\n%s", got, mb)
	}
}

// csJSONEqual compares decoded JSON values.
func csJSONEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}
