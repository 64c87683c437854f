package signing

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/testkit/interoptest"
	"github.com/oa-dev/oa/testkit/sigstoretest"
)

// Trust by certificate identity against the stock cosign CLI: a private CA
// and TSA made in the test, a trusted_root.json for them, signatures by
// stock `cosign sign --certificate … --certificate-chain …
// --tlog-upload=false` (with and without `--timestamp-server-url`), and
// the same verdict from stock `cosign verify` and VerifySignature.

const (
	idSubject = "https://github.com/acme/workers/.github/workflows/release.yml@refs/tags/v1.2.0"
	idIssuer  = "https://token.actions.githubusercontent.com"
)

// identityCase is one identity question asked of both verifiers.
type identityCase struct {
	name     string
	identity Identity
	// root is the trusted root file to verify against.
	root string
	// code is oa's refusal, "" when both must accept.
	code blocking.Code
	// validNow verifies with CertificateValidNow (cosign: no timestamp
	// needed for a certificate valid now).
	validNow bool
	// cosignLenient marks the one deliberate difference: cosign accepts a
	// certificate valid now when a signature has no timestamp at all (it
	// falls back to the current time), where oa asks for the policy's
	// explicit certificate_valid_now.
	cosignLenient bool
	// cosignV1Issuer marks a certificate with the issuer only in extension
	// 1.3.6.1.4.1.57264.1.8: cosign v2 reads only the deprecated …1.1 for
	// legacy signatures and refuses it; sigstore-go (and so oa) reads both.
	cosignV1Issuer bool
}

// cosignArgs are the cosign verify flags of c.
func (c identityCase) cosignArgs() []string {
	args := []string{"--trusted-root", c.root, "--insecure-ignore-tlog", "--insecure-ignore-sct"}
	if !c.validNow {
		args = append(args, "--use-signed-timestamps")
	}
	id := c.identity
	for flag, v := range map[string]string{
		"--certificate-identity": id.Subject, "--certificate-identity-regexp": id.SubjectRegexp,
		"--certificate-oidc-issuer": id.Issuer, "--certificate-oidc-issuer-regexp": id.IssuerRegexp,
	} {
		if v != "" {
			args = append(args, flag, v)
		}
	}
	return args
}

// TestIdentityInteropCosign signs with stock cosign and a test CA, and
// checks stock cosign and VerifySignature agree on every case of the
// issue: right identity, identity regexp, wrong identity, wrong issuer, a
// CA outside the trusted root, an expired certificate with and without a
// timestamp.
func TestIdentityInteropCosign(t *testing.T) {
	cs := csNeedCosign(t)
	st := csRegistry(t)
	ca := sigstoretest.NewCA(t)
	tsa := ca.ServeTSA(t)
	rootFile := cs.file(t, "trusted_root.json", ca.TrustedRoot(t, true))
	rootNoTSA := cs.file(t, "trusted_root_no_tsa.json", ca.TrustedRoot(t, false))
	now := time.Now()

	// sign signs artifact name with leaf by stock cosign, with a timestamp
	// when stamp is set.
	sign := func(t *testing.T, name string, leaf *sigstoretest.Leaf, stamp bool) ocispec.Descriptor {
		dir := t.TempDir()
		cert, chain, key := leaf.WriteFiles(t, dir)
		a := csPushWorker(t, st.target, name)
		args := []string{"sign", "--key", key, "--certificate", cert, "--certificate-chain", chain, "--tlog-upload=false", "-y"}
		if stamp {
			args = append(args, "--timestamp-server-url", tsa)
		}
		cs.withPassword(sigstoretest.Password).must(t, append(args, st.repo+"@"+a.Digest.String())...)
		return a
	}
	good := ca.Leaf(t, idSubject, idIssuer, now.Add(-time.Hour), now.Add(time.Hour))
	goodRef := sign(t, "id-good", good, true)
	goodNoStamp := sign(t, "id-good-nostamp", good, false)
	other := sigstoretest.NewCA(t)
	foreign := other.Leaf(t, idSubject, idIssuer, now.Add(-time.Hour), now.Add(time.Hour))
	foreignRef := sign(t, "id-foreign", foreign, true)
	// The expired certificate was valid from two hours to one hour ago;
	// the TSA's clock says the signature was made 90 minutes ago (inside),
	// or now (outside).
	expired := ca.Leaf(t, idSubject, idIssuer, now.Add(-2*time.Hour), now.Add(-time.Hour))
	ca.StampAt(now.Add(-90 * time.Minute))
	expiredStamped := sign(t, "id-expired-stamped", expired, true)
	ca.StampAt(time.Time{})
	expiredBare := sign(t, "id-expired-bare", expired, false)
	expiredLate := sign(t, "id-expired-late", expired, true)
	v2Only := sign(t, "id-v2-only", ca.LeafV2Only(t, idSubject, idIssuer, now.Add(-time.Hour), now.Add(time.Hour)), true)

	exact := Identity{Subject: idSubject, Issuer: idIssuer}
	for _, c := range []struct {
		identityCase
		desc ocispec.Descriptor
	}{
		{identityCase{name: "right identity", identity: exact, root: rootFile}, goodRef},
		{identityCase{name: "identity regexp", identity: Identity{SubjectRegexp: `^https://github\.com/acme/workers/\.github/workflows/release\.yml@refs/tags/`, IssuerRegexp: `^https://token\.actions\.githubusercontent\.com$`}, root: rootFile}, goodRef},
		{identityCase{name: "wrong identity", identity: Identity{Subject: "https://github.com/evil/workers/.github/workflows/release.yml@refs/tags/v1.2.0", Issuer: idIssuer}, root: rootFile, code: blocking.CertificateIdentityMismatch}, goodRef},
		{identityCase{name: "wrong identity regexp", identity: Identity{SubjectRegexp: `^https://github\.com/evil/`, Issuer: idIssuer}, root: rootFile, code: blocking.CertificateIdentityMismatch}, goodRef},
		{identityCase{name: "wrong issuer", identity: Identity{Subject: idSubject, Issuer: "https://accounts.google.com"}, root: rootFile, code: blocking.CertificateIdentityMismatch}, goodRef},
		{identityCase{name: "CA outside the trusted root", identity: exact, root: rootFile, code: blocking.CertificateUntrusted}, foreignRef},
		{identityCase{name: "no timestamp", identity: exact, root: rootFile, code: blocking.CertificateTimeUnproven, cosignLenient: true}, goodNoStamp},
		{identityCase{name: "no timestamp, valid now allowed", identity: exact, root: rootFile, validNow: true}, goodNoStamp},
		{identityCase{name: "timestamp from a TSA outside the trusted root", identity: exact, root: rootNoTSA, code: blocking.CertificateTimeUnproven}, goodRef},
		{identityCase{name: "expired, timestamp inside its window", identity: exact, root: rootFile}, expiredStamped},
		{identityCase{name: "expired, no timestamp", identity: exact, root: rootFile, code: blocking.CertificateTimeUnproven}, expiredBare},
		{identityCase{name: "expired, no timestamp, valid now allowed", identity: exact, root: rootFile, validNow: true, code: blocking.CertificateTimeUnproven}, expiredBare},
		{identityCase{name: "issuer only in extension 1.8", identity: exact, root: rootFile, cosignV1Issuer: true}, v2Only},
		{identityCase{name: "expired, timestamp after its window", identity: exact, root: rootFile, code: blocking.CertificateTimeUnproven}, expiredLate},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkIdentityCase(t, cs, st, c.identityCase, c.desc, FormLegacy)
		})
	}

	// cosign v3 writes a sigstore bundle with the certificate and the
	// timestamp; the same identities verify it, and cosign v3 agrees. With
	// --certificate-chain, cosign v3.1.3 puts the chain in a v0.3 bundle,
	// which the bundle spec forbids: neither cosign v3 nor oa reads it.
	cs3 := &csCosign{bin: interoptest.Tool(t, "cosign3"), env: cs.env, dir: cs.dir}
	cert, chain, key := good.WriteFiles(t, t.TempDir())
	sign3 := func(name string, extra ...string) ocispec.Descriptor {
		a := csPushWorker(t, st.target, name)
		args := append([]string{"sign", "--key", key, "--certificate", cert, "--tlog-upload=false", "--use-signing-config=false", "--timestamp-server-url", tsa, "-y"}, extra...)
		cs3.withPassword(sigstoretest.Password).must(t, append(args, st.repo+"@"+a.Digest.String())...)
		return a
	}
	v3, v3chain := sign3("id-v3"), sign3("id-v3-chain", "--certificate-chain", chain)
	for _, c := range []struct {
		identityCase
		desc ocispec.Descriptor
	}{
		{identityCase{name: "v3 bundle, right identity", identity: exact, root: rootFile}, v3},
		{identityCase{name: "v3 bundle, wrong identity", identity: Identity{Subject: "https://github.com/evil/x", Issuer: idIssuer}, root: rootFile, code: blocking.CertificateIdentityMismatch}, v3},
		{identityCase{name: "v3 bundle, CA outside the root", identity: exact, root: cs.file(t, "other_root.json", sigstoretest.NewCA(t).TrustedRoot(t, true)), code: blocking.CertificateUntrusted}, v3},
		{identityCase{name: "v3 bundle with a chain", identity: exact, root: rootFile, code: blocking.SignatureUntrusted}, v3chain},
	} {
		t.Run(c.name, func(t *testing.T) { checkIdentityCase(t, cs3, st, c.identityCase, c.desc, FormBundle) })
	}
}

// checkIdentityCase asks stock cosign (cs) and VerifySignature the same
// identity question about desc, whose signature is in form.
func checkIdentityCase(t *testing.T, cs *csCosign, st csStore, c identityCase, desc ocispec.Descriptor, form string) {
	t.Helper()
	ctx := context.Background()
	ref := st.repo + "@" + desc.Digest.String()
	out, cosignErr := cs.run(append([]string{"verify"}, append(c.cosignArgs(), ref)...)...)
	if wantCosign := (c.code == "" || c.cosignLenient) && !c.cosignV1Issuer; (cosignErr == nil) != wantCosign {
		t.Fatalf("stock cosign verify: err=%v, want accepted=%v\n%s", cosignErr, wantCosign, out)
	}
	rootBytes, err := os.ReadFile(c.root)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := LoadTrustedRoot(rootBytes)
	if err != nil {
		t.Fatal(err)
	}
	v, err := NewIdentityVerifier(c.identity, tr, IdentityOptions{CertificateValidNow: c.validNow})
	if err != nil {
		t.Fatal(err)
	}
	res, err := VerifySignature(ctx, st.target, desc, v)
	if c.code == "" {
		if err != nil {
			t.Fatalf("oa refused what cosign accepted: %v", err)
		}
		if res.Signer == nil || res.Signer.Subject != idSubject || res.Signer.Issuer != idIssuer || res.Form != form {
			t.Fatalf("signer %+v form %s", res.Signer, res.Form)
		}
		return
	}
	if r := blocking.Refusals(err); len(r) != 1 || r[0].Code != c.code {
		t.Fatalf("oa: %v; want %s", err, c.code)
	}
}

// withPassword is c with COSIGN_PASSWORD set to password.
func (c *csCosign) withPassword(password string) *csCosign {
	env := slices.DeleteFunc(slices.Clone(c.env), func(kv string) bool { return len(kv) > 16 && kv[:16] == "COSIGN_PASSWORD=" })
	return &csCosign{bin: c.bin, env: append(env, "COSIGN_PASSWORD="+password), dir: c.dir}
}
