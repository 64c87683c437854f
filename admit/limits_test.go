package admit

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/oci"
)

// TestPolicyLimits: a limits section sets the read limits (absent fields
// keep their defaults) and is part of the digest; a policy without one
// keeps the digest it always had and the default limits.
func TestPolicyLimits(t *testing.T) {
	base := host.StarterPolicy(host.InitOptions{Host: "h", Publishers: map[string][]byte{"acme": newKey(t).pub}, Authorities: map[string][]byte{"lab": newKey(t).pub}})
	load := func(text string) (*host.Policy, error) {
		path := filepath.Join(t.TempDir(), host.PolicyFile)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return host.LoadPolicy(path)
	}
	plain, err := load(base)
	if err != nil {
		t.Fatal(err)
	}
	if plain.ReadLimits() != oci.DefaultLimits() {
		t.Fatalf("limits without a section: %+v", plain.ReadLimits())
	}
	// The digest of a policy without the section is the digest of its
	// canonical JSON, which has no limits key.
	withLimits, err := load(base + "\nlimits: {component_bytes: 536870912, ir_bytes: 8388608}\n")
	if err != nil {
		t.Fatal(err)
	}
	got := withLimits.ReadLimits()
	want := oci.DefaultLimits()
	want.ComponentBytes, want.IRBytes = 536870912, 8388608
	if got != want {
		t.Fatalf("limits = %+v, want %+v", got, want)
	}
	if withLimits.Digest() == plain.Digest() {
		t.Fatal("the limits section is not part of the policy digest")
	}
	empty, err := load(base + "\nlimits: {}\n")
	if err != nil {
		t.Fatal(err)
	}
	if empty.ReadLimits() != oci.DefaultLimits() {
		t.Fatal("an empty limits section changed the limits")
	}
	_, err = load(base + "\nlimits: {manifest_bytes: 1}\n")
	if l := blocking.Refusals(err); len(l) == 0 || l[0].Code != blocking.PolicyInvalid {
		t.Fatalf("a limit below the floor: %v", err)
	}
}
