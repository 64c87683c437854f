package signing

import (
	"context"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
)

// csBenchArtifact pushes an artifact signed by the publisher key and
// attested by the authority key to a loopback registry.
func csBenchArtifact(b *testing.B) (csStore, ocispec.Descriptor) {
	b.Helper()
	ctx := context.Background()
	st := csRegistry(b)
	a := csPushWorker(b, st.target, "bench")
	if _, err := Sign(ctx, st.target, a, WriteOptions{Signer: csKey(b, 0).signer, Repository: st.repo}); err != nil {
		b.Fatal(err)
	}
	if _, err := Attest(ctx, st.target, a, ConformancePredicateType, []byte(csPredicate), WriteOptions{Signer: csKey(b, 1).signer, Repository: st.repo}); err != nil {
		b.Fatal(err)
	}
	return st, a
}

// BenchmarkVerify measures VerifySignature plus VerifyAttestation against
// the loopback registry, reporting registry requests and bytes per op.
func BenchmarkVerify(b *testing.B) {
	ctx := context.Background()
	st, a := csBenchArtifact(b)
	pub, auth := csKey(b, 0).verifier, csKey(b, 1).verifier
	st.reg.ResetCounters()
	b.ResetTimer()
	for range b.N {
		if _, err := VerifySignature(ctx, st.target, a, pub); err != nil {
			b.Fatal(err)
		}
		if _, err := VerifyAttestation(ctx, st.target, a, auth, ConformancePredicateType, WithPublisher(pub)); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(st.reg.Requests())/float64(b.N), "requests/op")
	b.ReportMetric(float64(st.reg.BytesServed())/float64(b.N), "served-B/op")
}

// BenchmarkVerifyBundle is BenchmarkVerify with the signature and the
// attestation as sigstore bundles under the referrers tag (cosign v3's
// default) instead of the legacy tags.
func BenchmarkVerifyBundle(b *testing.B) {
	ctx := context.Background()
	st := csRegistry(b)
	a := csPushWorker(b, st.target, "bench")
	pub, auth := csKey(b, 0), csKey(b, 1)
	if _, err := Sign(ctx, st.target, a, WriteOptions{Signer: pub.signer, Repository: st.repo, Bundle: true}); err != nil {
		b.Fatal(err)
	}
	if _, err := Attest(ctx, st.target, a, ConformancePredicateType, []byte(csPredicate), WriteOptions{Signer: auth.signer, Repository: st.repo, Bundle: true}); err != nil {
		b.Fatal(err)
	}
	st.reg.ResetCounters()
	b.ResetTimer()
	for range b.N {
		if res, err := VerifySignature(ctx, st.target, a, pub.verifier); err != nil || res.Form != FormBundle {
			b.Fatal(res, err)
		}
		if _, err := VerifyAttestation(ctx, st.target, a, auth.verifier, ConformancePredicateType, WithPublisher(pub.verifier)); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(st.reg.Requests())/float64(b.N), "requests/op")
	b.ReportMetric(float64(st.reg.BytesServed())/float64(b.N), "served-B/op")
}

// BenchmarkCosignVerify runs the stock `cosign verify` and
// `cosign verify-attestation` on the same kind of artifact, for the ratio
// to BenchmarkVerify.
func BenchmarkCosignVerify(b *testing.B) {
	cs := csNeedCosign(b)
	st, a := csBenchArtifact(b)
	pubPub := cs.file(b, "publisher.pub", csKey(b, 0).pub)
	authPub := cs.file(b, "authority.pub", csKey(b, 1).pub)
	ref := st.repo + "@" + a.Digest.String()
	st.reg.ResetCounters()
	b.ResetTimer()
	for range b.N {
		cs.must(b, "verify", "--key", pubPub, "--insecure-ignore-tlog", ref)
		cs.must(b, "verify-attestation", "--key", authPub, "--type", ConformancePredicateType, "--insecure-ignore-tlog", ref)
	}
	b.StopTimer()
	b.ReportMetric(float64(st.reg.Requests())/float64(b.N), "requests/op")
	b.ReportMetric(float64(st.reg.BytesServed())/float64(b.N), "served-B/op")
}

// BenchmarkVerifySignatureIdentity measures VerifySignature of a sigstore
// bundle signed with a certificate, with a transparency-log entry
// (inclusion proof and SET) and an RFC 3161 timestamp, by certificate
// identity against the virtual Sigstore's trusted root.
func BenchmarkVerifySignatureIdentity(b *testing.B) {
	ctx := context.Background()
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		b.Fatal(err)
	}
	st := csRegistry(b)
	a := csPushWorker(b, st.target, "bench")
	vsBundle(b, vs, st, a, vsSubject, vsStatement(b, a, CosignSignPredicateType, map[string]any{}), "tlog", "tsa")
	v, err := NewIdentityVerifier(Identity{Subject: vsSubject, Issuer: vsIssuer}, vsRoot(b, vs), IdentityOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if _, err := VerifySignature(ctx, st.target, a, v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifySignatureKeyBundle is the same read with a bundle signed
// by a key, for comparison.
func BenchmarkVerifySignatureKeyBundle(b *testing.B) {
	ctx := context.Background()
	st := csRegistry(b)
	a := csPushWorker(b, st.target, "bench")
	pub := csKey(b, 0)
	if _, err := Sign(ctx, st.target, a, WriteOptions{Signer: pub.signer, Repository: st.repo, Bundle: true}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if _, err := VerifySignature(ctx, st.target, a, pub.verifier); err != nil {
			b.Fatal(err)
		}
	}
}
