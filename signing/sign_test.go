package signing

import (
	"context"
	"encoding/json"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/sigstore/sigstore/pkg/signature/payload"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/oci"
)

// TestSignVerify signs an artifact in each kind of target and verifies it,
// and checks the .sig manifest has cosign's shape.
func TestSignVerify(t *testing.T) {
	csEachStore(t, func(t *testing.T, st csStore) {
		ctx := context.Background()
		k := csKey(t, 0)
		subject := csPushWorker(t, st.target, "a")
		sigDesc, err := Sign(ctx, st.target, subject, WriteOptions{Signer: k.signer, Repository: st.repo})
		if err != nil {
			t.Fatal(err)
		}
		res, err := VerifySignature(ctx, st.target, subject, k.verifier)
		if err != nil {
			t.Fatal(err)
		}
		if res.KeyID != k.verifier.KeyID() || res.Verified != 1 || res.Manifest.Digest != sigDesc.Digest || res.DockerReference != st.repo {
			t.Fatalf("result %+v", res)
		}
		csCheckSigShape(t, st, subject, 1)
	})
}

// csCheckSigShape checks the .sig manifest is exactly cosign's: an OCI
// image manifest without subject or artifactType, an image config, and n
// simple-signing layers with a signature annotation whose payload names
// subject.
func csCheckSigShape(t *testing.T, st csStore, subject ocispec.Descriptor, n int) {
	t.Helper()
	desc, m := csManifest(t, st.target, oci.SignatureTag(subject.Digest))
	if desc.MediaType != ocispec.MediaTypeImageManifest || m.MediaType != ocispec.MediaTypeImageManifest || m.SchemaVersion != 2 {
		t.Fatalf("manifest media type %q", m.MediaType)
	}
	if m.Subject != nil || m.ArtifactType != "" || m.Annotations != nil || m.Config.MediaType != cosignConfigMediaType {
		t.Fatalf("manifest is not cosign's shape: %+v", m)
	}
	if len(m.Layers) != n {
		t.Fatalf("%d layers; want %d", len(m.Layers), n)
	}
	for _, l := range m.Layers {
		if l.MediaType != oci.SimpleSigningMediaType || l.Annotations[SignatureAnnotation] == "" || len(l.Annotations) != 1 {
			t.Fatalf("layer %+v", l)
		}
		var sci payload.SimpleContainerImage
		if err := json.Unmarshal(csBlob(t, st.target, l), &sci); err != nil {
			t.Fatal(err)
		}
		if sci.Critical.Image.DockerManifestDigest != subject.Digest.String() || sci.Critical.Type != payload.CosignSignatureType {
			t.Fatalf("payload %+v", sci)
		}
	}
	var cfg ggcrConfig
	if err := json.Unmarshal(csBlob(t, st.target, m.Config), &cfg); err != nil || len(cfg.RootFS.DiffIDs) != n || len(cfg.History) != n {
		t.Fatalf("config %+v, %v", cfg, err)
	}
}

// TestSignIdempotent: signing twice with the same key leaves one layer and
// the same manifest, and the layout keeps no stray manifest.
func TestSignIdempotent(t *testing.T) {
	csEachStore(t, func(t *testing.T, st csStore) {
		ctx := context.Background()
		k := csKey(t, 0)
		subject := csPushWorker(t, st.target, "a")
		first, err := Sign(ctx, st.target, subject, WriteOptions{Signer: k.signer, Repository: st.repo})
		if err != nil {
			t.Fatal(err)
		}
		second, err := Sign(ctx, st.target, subject, WriteOptions{Signer: k.signer, Repository: st.repo})
		if err != nil {
			t.Fatal(err)
		}
		if first.Digest != second.Digest {
			t.Fatal("signing twice changed the signature manifest")
		}
		csCheckSigShape(t, st, subject, 1)
		if st.layout != "" && csIndexManifests(t, st.layout) != 2 {
			t.Fatalf("layout lists %d manifests; want the artifact and its .sig", csIndexManifests(t, st.layout))
		}
	})
}

// TestSignTwoKeys: a second key appends a layer, both keys verify, and the
// superseded manifest is deleted.
func TestSignTwoKeys(t *testing.T) {
	csEachStore(t, func(t *testing.T, st csStore) {
		ctx := context.Background()
		k0, k1 := csKey(t, 0), csKey(t, 1)
		subject := csPushWorker(t, st.target, "a")
		first, err := Sign(ctx, st.target, subject, WriteOptions{Signer: k0.signer, Repository: st.repo})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Sign(ctx, st.target, subject, WriteOptions{Signer: k1.signer, Repository: st.repo}); err != nil {
			t.Fatal(err)
		}
		csCheckSigShape(t, st, subject, 2)
		for _, k := range []csKeyPair{k0, k1} {
			res, err := VerifySignature(ctx, st.target, subject, k.verifier)
			if err != nil || res.Verified != 1 {
				t.Fatalf("verify with one of two keys: %+v, %v", res, err)
			}
		}
		_, err = VerifySignature(ctx, st.target, subject, csKey(t, 2).verifier)
		csWantCode(t, err, blocking.SignatureUntrusted)
		if ok, err := st.target.Exists(ctx, first); err != nil || ok {
			t.Fatalf("superseded .sig manifest still stored (exists=%v, %v)", ok, err)
		}
		if st.layout != "" && csIndexManifests(t, st.layout) != 2 {
			t.Fatalf("layout lists %d manifests; want 2", csIndexManifests(t, st.layout))
		}
	})
}

// TestSignRefusesBadInput: an unparseable repository name or a non-sha256
// subject is refused before anything is written.
func TestSignRefusesBadInput(t *testing.T) {
	st := csLayout(t)
	ctx := context.Background()
	k := csKey(t, 0)
	subject := csPushWorker(t, st.target, "a")
	for _, repo := range []string{"", "x", "UPPER/Case", "host:port:bad/x"} {
		_, err := Sign(ctx, st.target, subject, WriteOptions{Signer: k.signer, Repository: repo})
		csWantCode(t, err, blocking.ReferenceInvalid)
	}
	bad := subject
	bad.Digest = "sha512:abc"
	_, err := Sign(ctx, st.target, bad, WriteOptions{Signer: k.signer, Repository: st.repo})
	csWantCode(t, err, blocking.ReferenceInvalid)
	if _, err := st.target.Resolve(ctx, oci.SignatureTag(subject.Digest)); err == nil {
		t.Fatal("a refused Sign wrote a signature")
	}
}
