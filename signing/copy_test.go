package signing

import (
	"context"
	"errors"
	"slices"
	"testing"

	orasoci "oras.land/oras-go/v2/content/oci"
	"oras.land/oras-go/v2/errdef"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/testkit/registrytest"
)

// TestCopySignedCarriesBothForms copies an artifact signed and attested in
// both forms from a registry (referrers tag) to a layout and on into
// another registry; every signature and attestation verifies at the end
// and the counts say what travelled.
func TestCopySignedCarriesBothForms(t *testing.T) {
	ctx := context.Background()
	pub, auth := csKey(t, 0), csKey(t, 1)
	src := csRegistry(t)
	subject := csPushWorker(t, src.target, "a")
	if _, err := Sign(ctx, src.target, subject, WriteOptions{Signer: pub.signer, Repository: src.repo}); err != nil {
		t.Fatal(err)
	}
	if _, err := Sign(ctx, src.target, subject, WriteOptions{Signer: pub.signer, Repository: src.repo, Bundle: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := Attest(ctx, src.target, subject, ConformancePredicateType, []byte(csPredicate), WriteOptions{Signer: auth.signer, Repository: src.repo}); err != nil {
		t.Fatal(err)
	}
	if _, err := Attest(ctx, src.target, subject, ConformancePredicateType, []byte(csPredicate), WriteOptions{Signer: auth.signer, Repository: src.repo, Bundle: true}); err != nil {
		t.Fatal(err)
	}
	medium := csLayout(t)
	res, err := CopySigned(ctx, src.target, medium.target, subject, CopyOptions{Tag: "1.0"})
	if err != nil {
		t.Fatal(err)
	}
	want := CopyResult{Parts: []string{"artifact", "att", "bundles", "sig"}, Signatures: 2, Attestations: 2, Bundles: 2}
	if !slices.Equal(res.Parts, want.Parts) || res.Signatures != 2 || res.Attestations != 2 || res.Bundles != 2 {
		t.Fatalf("copied %+v; want %+v", res, want)
	}
	reopened, err := orasoci.New(medium.layout)
	if err != nil {
		t.Fatal(err)
	}
	inside := registrytest.Start(t).Repository(t, "mirror/clinic")
	if _, err := CopySigned(ctx, reopened, inside, subject, CopyOptions{Tag: "1.0"}); err != nil {
		t.Fatal(err)
	}
	sig, err := VerifySignature(ctx, inside, subject, pub.verifier)
	if err != nil || sig.Verified != 2 {
		t.Fatalf("signatures after two copies: %+v, %v", sig, err)
	}
	att, err := VerifyAttestation(ctx, inside, subject, auth.verifier, ConformancePredicateType, WithPublisher(pub.verifier))
	if err != nil || att.Verified != 2 {
		t.Fatalf("attestations after two copies: %+v, %v", att, err)
	}
	// Copying again writes nothing new and counts the same.
	again, err := CopySigned(ctx, reopened, inside, subject, CopyOptions{})
	if err != nil || again.Signatures != 2 || again.Attestations != 2 {
		t.Fatalf("second copy: %+v, %v", again, err)
	}
	if sig, err := VerifySignature(ctx, inside, subject, pub.verifier); err != nil || sig.Verified != 2 {
		t.Fatalf("a second copy duplicated or lost signatures: %+v, %v", sig, err)
	}
}

// TestCopySignedUnsigned: an unsigned artifact copies with zero counts, and
// with RequireSigned is refused with nothing written; an attestation alone
// is not a signature.
func TestCopySignedUnsigned(t *testing.T) {
	ctx := context.Background()
	src := csLayout(t)
	subject := csPushWorker(t, src.target, "a")
	dst := csLayout(t)
	_, err := CopySigned(ctx, src.target, dst.target, subject, CopyOptions{Tag: "x", RequireSigned: true})
	csWantCode(t, err, blocking.CopyUnsigned)
	if _, err := dst.target.Resolve(ctx, subject.Digest.String()); !errors.Is(err, errdef.ErrNotFound) {
		t.Fatalf("a refused copy wrote the artifact: %v", err)
	}
	if _, err := Attest(ctx, src.target, subject, ConformancePredicateType, []byte(csPredicate), WriteOptions{Signer: csKey(t, 1).signer, Repository: src.repo, Bundle: true}); err != nil {
		t.Fatal(err)
	}
	_, err = CopySigned(ctx, src.target, dst.target, subject, CopyOptions{RequireSigned: true})
	csWantCode(t, err, blocking.CopyUnsigned)
	res, err := CopySigned(ctx, src.target, dst.target, subject, CopyOptions{})
	if err != nil || res.Signatures != 0 || res.Attestations != 1 || res.Bundles != 1 {
		t.Fatalf("%+v, %v", res, err)
	}
	if _, err := Sign(ctx, src.target, subject, WriteOptions{Signer: csKey(t, 0).signer, Repository: src.repo, Bundle: true}); err != nil {
		t.Fatal(err)
	}
	if res, err := CopySigned(ctx, src.target, dst.target, subject, CopyOptions{RequireSigned: true}); err != nil || res.Signatures != 1 {
		t.Fatalf("signed copy: %+v, %v", res, err)
	}
	if _, err := VerifySignature(ctx, dst.target, subject, csKey(t, 0).verifier); err != nil {
		t.Fatal(err)
	}
}
