package signing

import (
	"context"
	"testing"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/testkit/interoptest"
)

// Interop with stock cosign v3 (v3.1.3, interoptest's "cosign3"), which
// signs and attests in the sigstore bundle format by default. Offline as
// everywhere in oa: no transparency log upload, no signing config fetched,
// and verification with the key alone.

// cs3Sign are the flags that keep cosign v3's signing offline.
var cs3Sign = []string{"--tlog-upload=false", "--use-signing-config=false", "-y"}

// cs3Verify are the flags that keep cosign v3's verification offline.
var cs3Verify = []string{"--insecure-ignore-tlog=true"}

// cs3NeedCosign returns stock cosign v3 with an isolated, offline
// environment.
func cs3NeedCosign(t testing.TB) *csCosign {
	t.Helper()
	cs := csNeedCosign(t)
	cs.bin = interoptest.Tool(t, "cosign3")
	return cs
}

// cs3 runs cosign v3 subcommand cmd with extra flags, then args.
func cs3(cmd string, flags []string, args ...string) []string {
	return append(append([]string{cmd}, flags...), args...)
}

// TestCosign3Interop checks both directions against stock cosign v3 on an
// in-process registry without the referrers API (so cosign v3 writes, and
// oa reads, the `sha256-<hex>` referrers tag).
func TestCosign3Interop(t *testing.T) {
	cs := cs3NeedCosign(t)
	f := newInterop(t, cs)
	st, pub, auth, ref := f.st, f.pub, f.auth, f.ref
	pubKey, pubPub, authKey, authPub, otherPub := f.pubKey, f.pubPub, f.authKey, f.authPub, f.otherPub
	ctx := context.Background()

	t.Run("VerifySignature accepts cosign v3 sign", func(t *testing.T) {
		a := csPushWorker(t, st.target, "cosign3-signed")
		cs.must(t, cs3("sign", cs3Sign, "--key", pubKey, ref(a))...)
		if _, err := st.target.Resolve(ctx, "sha256-"+a.Digest.Encoded()); err != nil {
			t.Fatalf("cosign v3 wrote no referrers tag: %v", err)
		}
		res, err := VerifySignature(ctx, st.target, a, pub.verifier)
		if err != nil || res.Form != FormBundle || res.Verified != 1 {
			t.Fatalf("%+v, %v", res, err)
		}
		_, err = VerifySignature(ctx, st.target, a, auth.verifier)
		csWantCode(t, err, blocking.SignatureUntrusted)
		// oa appends its own bundle beside cosign's, and cosign v3 reads both.
		if _, err := Sign(ctx, st.target, a, WriteOptions{Signer: auth.signer, Repository: st.repo, Bundle: true}); err != nil {
			t.Fatal(err)
		}
		cs.must(t, cs3("verify", cs3Verify, "--key", pubPub, ref(a))...)
		cs.must(t, cs3("verify", cs3Verify, "--key", authPub, ref(a))...)
	})

	t.Run("VerifyAttestation accepts cosign v3 attest", func(t *testing.T) {
		a := csPushWorker(t, st.target, "cosign3-attested")
		pred := cs.file(t, "predicate.json", []byte(csPredicate+"\n"))
		cs.must(t, cs3("attest", cs3Sign, "--key", authKey, "--type", ConformancePredicateType, "--predicate", pred, ref(a))...)
		res, err := VerifyAttestation(ctx, st.target, a, auth.verifier, ConformancePredicateType, WithPublisher(pub.verifier))
		if err != nil || res.Form != FormBundle || !csSameJSON(res.Predicate, csPredicate) {
			t.Fatalf("%+v, %v", res, err)
		}
		_, err = VerifyAttestation(ctx, st.target, a, auth.verifier, "https://example.com/other/v1")
		csWantCode(t, err, blocking.AttestationPredicateBad)
		// An attestation is not a signature.
		_, err = VerifySignature(ctx, st.target, a, auth.verifier)
		csWantCode(t, err, blocking.SignatureMissing)
	})

	t.Run("cosign v3 verifies Sign and Attest (legacy tags)", func(t *testing.T) {
		a := csPushWorker(t, st.target, "oa-legacy")
		if _, err := Sign(ctx, st.target, a, WriteOptions{Signer: pub.signer, Repository: st.repo}); err != nil {
			t.Fatal(err)
		}
		if _, err := Attest(ctx, st.target, a, ConformancePredicateType, []byte(csPredicate), WriteOptions{Signer: auth.signer, Repository: st.repo}); err != nil {
			t.Fatal(err)
		}
		cs.must(t, cs3("verify", cs3Verify, "--key", pubPub, ref(a))...)
		if out, err := cs.run(cs3("verify", cs3Verify, "--key", otherPub, ref(a))...); err == nil {
			t.Fatalf("cosign v3 verify accepted another key:\n%s", out)
		}
		cs.must(t, cs3("verify-attestation", cs3Verify, "--key", authPub, "--type", ConformancePredicateType, ref(a))...)
		if out, err := cs.run(cs3("verify-attestation", cs3Verify, "--key", authPub, "--type", "https://example.com/other/v1", ref(a))...); err == nil {
			t.Fatalf("cosign v3 verify-attestation accepted another type:\n%s", out)
		}
	})

	t.Run("cosign v3 verifies Sign and Attest with Bundle", func(t *testing.T) {
		a := csPushWorker(t, st.target, "oa-bundle")
		if _, err := Sign(ctx, st.target, a, WriteOptions{Signer: pub.signer, Repository: st.repo, Bundle: true}); err != nil {
			t.Fatal(err)
		}
		if _, err := Attest(ctx, st.target, a, ConformancePredicateType, []byte(csPredicate), WriteOptions{Signer: auth.signer, Repository: st.repo, Bundle: true}); err != nil {
			t.Fatal(err)
		}
		cs.must(t, cs3("verify", cs3Verify, "--key", pubPub, ref(a))...)
		if out, err := cs.run(cs3("verify", cs3Verify, "--key", otherPub, ref(a))...); err == nil {
			t.Fatalf("cosign v3 verify accepted another key:\n%s", out)
		}
		cs.must(t, cs3("verify-attestation", cs3Verify, "--key", authPub, "--type", ConformancePredicateType, ref(a))...)
	})

	t.Run("CopySigned carries cosign v3's bundles", func(t *testing.T) {
		a := csPushWorker(t, st.target, "cosign3-copied")
		pred := cs.file(t, "predicate.json", []byte(csPredicate+"\n"))
		cs.must(t, cs3("sign", cs3Sign, "--key", pubKey, ref(a))...)
		cs.must(t, cs3("attest", cs3Sign, "--key", authKey, "--type", ConformancePredicateType, "--predicate", pred, ref(a))...)
		medium := csLayout(t)
		res, err := CopySigned(ctx, st.target, medium.target, a, CopyOptions{})
		if err != nil || res.Signatures != 1 || res.Attestations != 1 || res.Bundles != 2 {
			t.Fatalf("to the layout: %+v, %v", res, err)
		}
		inside := csRegistry(t)
		if _, err := CopySigned(ctx, medium.target, inside.target, a, CopyOptions{Tag: "landed"}); err != nil {
			t.Fatal(err)
		}
		if _, err := VerifySignature(ctx, inside.target, a, pub.verifier); err != nil {
			t.Fatal(err)
		}
		landed := inside.repo + "@" + a.Digest.String()
		cs.must(t, cs3("verify", cs3Verify, "--key", pubPub, landed)...)
		cs.must(t, cs3("verify-attestation", cs3Verify, "--key", authPub, "--type", ConformancePredicateType, landed)...)
	})
}
