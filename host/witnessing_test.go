package host_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"strings"
	"testing"

	"filippo.io/torchwood"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/host"
)

func witnessKey(t *testing.T, name string) string {
	t.Helper()
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	s, err := torchwood.NewCosignatureSigner(name, priv)
	if err != nil {
		t.Fatal(err)
	}
	return s.Verifier().String()
}

func witnessPolicy(t *testing.T, section string) string {
	t.Helper()
	return host.StarterPolicy(host.InitOptions{Host: "h", Publishers: map[string][]byte{"acme": newPub(t)}, Authorities: map[string][]byte{"lab": newPub(t)}}) + "\nwitnessing: {\n" + section + "\n}\n"
}

// TestPolicyWitnessing: a policy's witnessing section loads with each
// witness's key parsed, and is left out of the digest when absent; a bad
// key, a shared key, a URL that is not https (or http on loopback) and a
// quorum above the witnesses named are policy_witness_invalid, located.
func TestPolicyWitnessing(t *testing.T) {
	k1, k2 := witnessKey(t, "w1.example"), witnessKey(t, "w2.example")
	p, err := loadText(t, witnessPolicy(t, fmt.Sprintf(`witnesses: {
	one: {key: %q, url: "https://w1.example/witness"}
	two: {key: %q, url: "http://127.0.0.1:7380"}
}
quorum: 2`, k1, k2)))
	if err != nil {
		t.Fatal(err)
	}
	if w := p.Witnessing; w == nil || w.Quorum != 2 || len(w.Verifiers()) != 2 || w.Witnesses["one"].Verifier().Name() != "w1.example" {
		t.Fatalf("witnessing %+v", p.Witnessing)
	}
	for name, c := range map[string]struct{ section, field string }{
		"bad key":    {fmt.Sprintf(`witnesses: one: {key: "w1.example+00000000+AAAA", url: "https://w"}` + "\nquorum: 1"), "witnessing.witnesses.one.key"},
		"shared key": {fmt.Sprintf("witnesses: {\n\tone: {key: %q, url: \"https://a\"}\n\ttwo: {key: %q, url: \"https://b\"}\n}\nquorum: 1", k1, k1), "witnessing.witnesses.two.key"},
		"plain http": {fmt.Sprintf(`witnesses: one: {key: %q, url: "http://w1.example"}`+"\nquorum: 1", k1), "witnessing.witnesses.one.url"},
		"quorum":     {fmt.Sprintf(`witnesses: one: {key: %q, url: "https://w1.example"}`+"\nquorum: 2", k1), "witnessing.quorum"},
	} {
		_, err := loadText(t, witnessPolicy(t, c.section))
		if !blocking.Has(err, blocking.PolicyWitnessInvalid) || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := loadText(t, witnessPolicy(t, "quorum: 0")); err == nil {
		t.Error("a section without witnesses loaded")
	}
}
