package bind

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/oci"
)

// oldBinding is a binding record as earlier versions of oa wrote it: the
// reference a string and layoutPath a flag beside it. The format is
// unchanged; the reference is parsed once where a binding is loaded.
const oldBinding = `{"type":"oa.binding/v1","host":"clinic-host","deployment":"clinic","seq":1,
"reference":"clinic-triage@sha256:0000000000000000000000000000000000000000000000000000000000000001",
"layoutPath":false,"artifactDigest":"sha256:0000000000000000000000000000000000000000000000000000000000000001",
"planDigest":"sha256:2","plan":{},"personaDigest":"","sessionPolicy":{},"model":"m","connections":[],
"approved":[],"approvedBy":"Dr Ada","osAccount":"ada","approvedAt":"2026-01-01T00:00:00Z"}`

// TestBindingParsesItsReferenceOnce: an existing binding record loads, its
// reference read under the host's home once (a layout named under
// $OA_HOME/oci), and a reference that does not parse is kept as the
// refusal the release's reads return, the rest of the binding loaded.
func TestBindingParsesItsReferenceOnce(t *testing.T) {
	var b Binding
	if err := json.Unmarshal([]byte(oldBinding), &b); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	b.parseRelease(home)
	if b.releaseErr != nil {
		t.Fatalf("an old binding's reference: %v", b.releaseErr)
	}
	if want := filepath.Join(home, "oci", "clinic-triage"); b.release.Layout != want || b.release.Digest.String() != b.ArtifactDigest {
		t.Errorf("parsed %+v; want the layout %s at the bound digest", b.release, want)
	}
	b.Reference = "clinic-triage@sha256:not-hex"
	b.parseRelease(home)
	if !blocking.Has(b.releaseErr, blocking.ReferenceInvalid) {
		t.Errorf("a bad reference: %v; want reference_invalid", b.releaseErr)
	}
	if _, err := OpenRelease(t.Context(), nil, &b, oci.OpenOptions{}); !blocking.Has(err, blocking.ReferenceInvalid) {
		t.Errorf("OpenRelease of a bad reference: %v; want reference_invalid before anything is read", err)
	}
}
