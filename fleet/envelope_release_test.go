package fleet

import (
	"testing"

	"github.com/oa-dev/oa/blocking"
)

// TestEnvelopeReleaseIsARegistryReferenceToItsDigest: an envelope's
// Release is read once, by envelopeRelease, and only a registry reference
// pinned to the envelope's artifactDigest is a release; a layout name, a
// tag, another digest or junk is an error, never a reference to read.
func TestEnvelopeReleaseIsARegistryReferenceToItsDigest(t *testing.T) {
	const d = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	const other = "sha256:1123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	rel, err := envelopeRelease(&Envelope{Release: "registry.example:5000/oa/clinic@" + d, ArtifactDigest: d})
	if err != nil {
		t.Fatal(err)
	}
	if rel.Registry != "registry.example:5000" || rel.Repository != "oa/clinic" || rel.Digest.String() != d {
		t.Fatalf("read as %+v", rel)
	}
	for name, release := range map[string]string{
		"layout name":  "clinic@" + d,
		"tag only":     "registry.example/oa/clinic:v1",
		"other digest": "registry.example/oa/clinic@" + other,
		"not a digest": "registry.example/oa/clinic@sha256:00",
		"not a ref":    "Registry.Example/OA/clinic@" + d,
		"empty":        "",
	} {
		_, err := envelopeRelease(&Envelope{Release: release, ArtifactDigest: d})
		if err == nil {
			t.Errorf("%s: %q read as a release", name, release)
			continue
		}
		if blocking.Refusals(err) == nil {
			t.Errorf("%s: a fault, not a refusal: %v", name, err)
		}
	}
}
