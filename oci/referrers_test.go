package oci

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"

	"github.com/oa-dev/oa/blocking"
)

// packReferrer pushes a manifest of artifactType with one layer of the
// same type holding data, naming subject as its subject when not nil.
func packReferrer(t *testing.T, target oras.Target, artifactType string, subject *ocispec.Descriptor, data string) ocispec.Descriptor {
	t.Helper()
	ctx := context.Background()
	layer, err := oras.PushBytes(ctx, target, artifactType, []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	desc, err := oras.PackManifest(ctx, target, oras.PackManifestVersion1_1, artifactType, oras.PackManifestOptions{Subject: subject, Layers: []ocispec.Descriptor{layer}})
	if err != nil {
		t.Fatal(err)
	}
	return desc
}

// TestReferrersReadsOnlyReferrersOfTheType: Referrers finds the manifests
// of the asked artifact type whose subject is the artifact, with their
// layer's bytes, and skips another type and another subject; a copy plan
// carries exactly those as its bundles; a referrer layer changed in
// storage is layer_digest_mismatch.
func TestReferrersReadsOnlyReferrersOfTheType(t *testing.T) {
	ctx := context.Background()
	store, dir := newLayout(t)
	subject := packReferrer(t, store, "application/vnd.example.subject", nil, "subject")
	other := packReferrer(t, store, "application/vnd.example.subject", nil, "other")
	want := packReferrer(t, store, BundleMediaType, &subject, "bundle of the subject")
	packReferrer(t, store, "application/vnd.example.note", &subject, "a note")
	packReferrer(t, store, BundleMediaType, &other, "bundle of another")

	got, err := Referrers(ctx, store, subject, BundleMediaType)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Manifest.Digest != want.Digest || string(got[0].Data) != "bundle of the subject" || got[0].TooLarge != nil {
		t.Fatalf("referrers %+v", got)
	}

	plan, err := PlanCopy(ctx, store, subject)
	if err != nil {
		t.Fatal(err)
	}
	if parts := plan.Parts(); !slices.Equal(parts, []string{"artifact", "bundles"}) || plan.Signatures.Found || plan.Attestations.Found {
		t.Fatalf("plan parts %v, tags %+v %+v", parts, plan.Signatures, plan.Attestations)
	}
	dst, _ := newLayout(t)
	if err := plan.Copy(ctx, store, dst, ""); err != nil {
		t.Fatal(err)
	}
	if copied, err := Referrers(ctx, dst, subject, BundleMediaType); err != nil || len(copied) != 1 || copied[0].Manifest.Digest != want.Digest {
		t.Fatalf("the copy's referrers: %+v, %v", copied, err)
	}

	path := blobPath(dir, got[0].Layer)
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("bundle of the subjecT"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Referrers(ctx, store, subject, BundleMediaType)
	wantCode(t, err, blocking.LayerDigestMismatch)
}

// TestReadCosignManifest: a missing tag is not found (no error); a tagged
// image manifest is read with its layers.
func TestReadCosignManifest(t *testing.T) {
	ctx := context.Background()
	store, _ := newLayout(t)
	subject := packReferrer(t, store, "application/vnd.example.subject", nil, "subject")
	m, err := ReadCosignManifest(ctx, store, SignatureTag(subject.Digest))
	if err != nil || m.Found {
		t.Fatalf("missing tag: %+v, %v", m, err)
	}
	layer := content.NewDescriptorFromBytes(SimpleSigningMediaType, []byte("{}"))
	if _, err := PushIfMissing(ctx, store, layer, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	sig, err := oras.PackManifest(ctx, store, oras.PackManifestVersion1_1, "application/vnd.example.signatures", oras.PackManifestOptions{Layers: []ocispec.Descriptor{layer}})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Tag(ctx, sig, SignatureTag(subject.Digest)); err != nil {
		t.Fatal(err)
	}
	m, err = ReadCosignManifest(ctx, store, SignatureTag(subject.Digest))
	if err != nil || !m.Found || !m.Parsed || m.TooLarge || m.Descriptor.Digest != sig.Digest || len(m.Layers) != 1 || m.Layers[0].Digest != layer.Digest {
		t.Fatalf("tagged manifest: %+v, %v", m, err)
	}
}

// TestPlanCopyRefusesAnOversizedCosignTag: a `.sig` tag naming a manifest
// larger than any cosign writes cannot travel intact, so the plan refuses
// copy_signature_too_large before anything is written.
func TestPlanCopyRefusesAnOversizedCosignTag(t *testing.T) {
	ctx := context.Background()
	store, _ := newLayout(t)
	subject := packReferrer(t, store, "application/vnd.example.subject", nil, "subject")
	huge := mustJSON(t, ocispec.Manifest{
		MediaType:   ocispec.MediaTypeImageManifest,
		Config:      ocispec.DescriptorEmptyJSON,
		Annotations: map[string]string{"padding": strings.Repeat("a", maxCosignManifestSize)},
	})
	desc := pushRaw(t, store, huge)
	if err := store.Tag(ctx, desc, SignatureTag(subject.Digest)); err != nil {
		t.Fatal(err)
	}
	_, err := PlanCopy(ctx, store, subject)
	wantCode(t, err, blocking.CopySignatureTooLarge)
}
