package host_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector/confine"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/signing"
)

// newPub is a fresh public key PEM.
func newPub(t *testing.T) []byte {
	t.Helper()
	_, pub, err := signing.GenerateKeys(nil)
	if err != nil {
		t.Fatal(err)
	}
	return pub
}

func code(err error) blocking.Code {
	if l := blocking.Refusals(err); l != nil {
		return l[0].Code
	}
	return ""
}

func TestLoadPolicyRefusals(t *testing.T) {
	good := host.StarterPolicy(host.InitOptions{Host: "h", Publishers: map[string][]byte{"acme": newPub(t)}, Authorities: map[string][]byte{"lab": newPub(t)}})
	shared := newPub(t)
	cases := map[string]struct {
		text string
		want blocking.Code
		pos  string
	}{
		"syntax":              {strings.Replace(good, "host: ", "host: {", 1), blocking.PolicyInvalid, "policy.cue:"},
		"wrong package":       {strings.Replace(good, "package host", "package other", 1), blocking.PolicyInvalid, "policy.cue:1:1"},
		"unknown field":       {good + "\nextra: 1\n", blocking.PolicyInvalid, "policy.cue:"},
		"bad key":             {strings.Replace(good, "-----BEGIN PUBLIC KEY-----\\n", "-----BEGIN PUBLIC KEY-----\\nAAAA", 1), blocking.PolicyKeyInvalid, ""},
		"authority=publisher": {host.StarterPolicy(host.InitOptions{Host: "h", Publishers: map[string][]byte{"acme": shared}, Authorities: map[string][]byte{"lab": shared}}), blocking.PolicyAuthorityIsPublisher, ""},
		"regulated default":   {strings.Replace(good, `default_profile: "standard"`, `default_profile: "regulated"`, 1) + "", "", ""},
		"bad lifetime":        {strings.Replace(good, `max_lifetime:    "2160h"`, `max_lifetime: "forever"`, 1), blocking.PolicyInvalid, "policy.cue:"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "policy.cue")
			os.WriteFile(p, []byte(c.text), 0o644)
			_, err := host.LoadPolicy(p)
			if c.want == "" {
				if err != nil {
					t.Fatalf("refused a valid policy: %v", err)
				}
				return
			}
			l := blocking.Refusals(err)
			if len(l) == 0 || l[0].Code != c.want || !strings.Contains(l[0].Pos, c.pos) {
				t.Fatalf("host.LoadPolicy = %v, want %s at %s", err, c.want, c.pos)
			}
		})
	}
	if _, err := host.LoadPolicy(filepath.Join(t.TempDir(), "missing.cue")); code(err) != blocking.PolicyUnreadable {
		t.Fatalf("missing file: %v", err)
	}
	if _, err := host.Open(context.Background(), t.TempDir()); code(err) != blocking.HostNotInitialized {
		t.Fatalf("empty home: %v", err)
	}
	if err := host.Init(t.TempDir(), host.InitOptions{}); err != nil {
		t.Fatalf("init with no keys: %v", err)
	}
}

// TestPolicyLimits: a limits section sets the read limits (absent fields
// keep their defaults) and is part of the digest; a policy without one
// keeps the digest it always had and the default limits.
func TestPolicyLimits(t *testing.T) {
	base := host.StarterPolicy(host.InitOptions{Host: "h", Publishers: map[string][]byte{"acme": newPub(t)}, Authorities: map[string][]byte{"lab": newPub(t)}})
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

// TestPolicyConfinementMinimum: confinement.minimum names guarantees; an
// unknown name is refused at its place in the file with the valid names;
// unset, the minimum is the default (filesystem, network) and the digest
// is the one a section without it always had; set, it is part of the
// digest, an empty list included.
func TestPolicyConfinementMinimum(t *testing.T) {
	base := host.StarterPolicy(host.InitOptions{Host: "h", Publishers: map[string][]byte{"acme": newPub(t)}, Authorities: map[string][]byte{"lab": newPub(t)}})
	load := func(text string) (*host.Policy, error) {
		path := filepath.Join(t.TempDir(), host.PolicyFile)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return host.LoadPolicy(path)
	}
	must := func(text string) *host.Policy {
		t.Helper()
		p, err := load(text)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	plain := must(base)
	if got := plain.ConfinementMinimum(); !slices.Equal(got, confine.DefaultMinimum) || !slices.Equal(host.DefaultConfinementMinimum, confine.DefaultMinimum) {
		t.Fatalf("default minimum = %v, want %v", got, confine.DefaultMinimum)
	}
	section := must(base + "\nconfinement: allow_unconfined: true\n")
	if got := section.ConfinementMinimum(); !slices.Equal(got, confine.DefaultMinimum) {
		t.Fatalf("a section without minimum: %v", got)
	}
	set := must(base + "\nconfinement: minimum: [\"filesystem\", \"network\", \"signals\"]\n")
	if got := set.ConfinementMinimum(); !slices.Equal(got, []string{"filesystem", "network", "signals"}) {
		t.Fatalf("minimum = %v", got)
	}
	none := must(base + "\nconfinement: minimum: []\n")
	if got := none.ConfinementMinimum(); len(got) != 0 {
		t.Fatalf("an empty minimum = %v", got)
	}
	if d := map[string]bool{plain.Digest(): true, set.Digest(): true, none.Digest(): true}; len(d) != 3 {
		t.Fatal("the minimum is not part of the policy digest")
	}
	_, err := load(base + "\nconfinement: minimum: [\"filesystem\", \"pids\"]\n")
	l := blocking.Refusals(err)
	if len(l) != 1 || l[0].Code != blocking.PolicyInvalid || l[0].Path != "confinement.minimum[1]" || !strings.Contains(l[0].Pos, host.PolicyFile+":") || !strings.Contains(l[0].Detail, strings.Join(confine.Guarantees, ", ")) {
		t.Fatalf("an unknown guarantee: %v", err)
	}
}

// TestConfinementGuaranteesAreConfines: the names a policy may use are
// exactly connector/confine's guarantees, in its order.
func TestConfinementGuaranteesAreConfines(t *testing.T) {
	if !slices.Equal(host.ConfinementGuarantees, confine.Guarantees) {
		t.Fatalf("host.ConfinementGuarantees = %v, confine.Guarantees = %v", host.ConfinementGuarantees, confine.Guarantees)
	}
}
