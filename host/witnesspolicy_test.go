package host_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/host"
)

// loadWithFile writes the policy and a tlog-policy file beside it.
func loadWithFile(t *testing.T, policy, name, text string) (*host.Policy, string, error) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "policy.cue")
	if err := os.WriteFile(p, []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	pol, err := host.LoadPolicy(p)
	return pol, dir, err
}

// TestWitnessPolicyText: witnessing given as c2sp.org/tlog-policy text,
// in a file beside the policy or inline, loads into the same witnesses
// (keys parsed, URLs kept) the CUE form gives, with the quorum a group:
// nested groups are evaluated as groups, not as a flat count.
func TestWitnessPolicyText(t *testing.T) {
	k1, k2, k3 := witnessKey(t, "w1.example"), witnessKey(t, "w2.example"), witnessKey(t, "w3.example")
	_, logKey, _ := note.GenerateKey(nil, "oa/h")
	text := fmt.Sprintf(`# the host's witnesses
log %s
witness one %s https://w1.example/witness
witness two %s http://127.0.0.1:7380   # a local one
witness three %s https://w3.example
group pair any two three
group main all one pair
quorum main
`, logKey, k1, k2, k3)
	p, _, err := loadWithFile(t, witnessPolicy(t, `policy_file: "witnesses.policy"`), "witnesses.policy", text)
	if err != nil {
		t.Fatal(err)
	}
	w := p.Witnessing
	if len(w.Witnesses) != 3 || w.Witnesses["two"].URL != "http://127.0.0.1:7380" || w.Witnesses["one"].Verifier().Name() != "w1.example" || len(w.Logs) != 1 || w.Logs[0] != logKey {
		t.Fatalf("witnessing %+v", w)
	}
	if w.Quorum != 2 || w.Group() == nil || w.Group().Name != "main" {
		t.Fatalf("quorum %d, group %+v", w.Quorum, w.Group())
	}
	for cosigners, want := range map[string]bool{
		"one,two": true, "one,three": true, "one,two,three": true,
		"two,three": false, "one": false, "": false,
	} {
		if got := w.Satisfied(strings.Split(cosigners, ",")); got != want {
			t.Errorf("cosigned by %q: satisfied %v, want %v", cosigners, got, want)
		}
	}
	inline, err := loadText(t, witnessPolicy(t, fmt.Sprintf("policy: %q", text)))
	if err != nil {
		t.Fatal(err)
	}
	if inline.Witnessing.Quorum != 2 || len(inline.Witnessing.Witnesses) != 3 || inline.Digest() == p.Digest() && inline.Witnessing.PolicyFile != "" {
		t.Fatalf("inline %+v", inline.Witnessing)
	}
	// The file's text is part of the policy's digest: other witnesses
	// in the file are another policy.
	other, _, err := loadWithFile(t, witnessPolicy(t, `policy_file: "witnesses.policy"`), "witnesses.policy", strings.Replace(text, "quorum main", "quorum pair", 1))
	if err != nil {
		t.Fatal(err)
	}
	if other.Digest() == p.Digest() {
		t.Error("a policy whose tlog-policy file changed has the same digest")
	}
	none, err := loadText(t, witnessPolicy(t, fmt.Sprintf("policy: %q", fmt.Sprintf("witness one %s https://w1.example\nquorum none\n", k1))))
	if err != nil || none.Witnessing.Group() != nil || none.Witnessing.Quorum != 0 || !none.Witnessing.Satisfied(nil) {
		t.Fatalf("quorum none: %+v, %v", none, err)
	}
}

// TestWitnessPolicyRefusals: each wrong line is policy_witness_invalid
// located at FILE:LINE (or the inline field and its line) and names its
// rule; a missing file, a mix of forms, and half the CUE form too.
func TestWitnessPolicyRefusals(t *testing.T) {
	k1, k2 := witnessKey(t, "w1.example"), witnessKey(t, "w2.example")
	_, logKey, _ := note.GenerateKey(nil, "oa/h")
	w1 := "witness one " + k1 + " https://w1.example\n"
	for name, c := range map[string]struct{ text, at, want string }{
		"unknown rule":       {w1 + "witnesses two\nquorum one\n", ":2", "witnessing.policy_file: witnesses"},
		"bad key":            {"witness one w1.example+00000000+AAAA https://w\nquorum one\n", ":1", "not a witness's public key"},
		"log key as witness": {"witness one " + logKey + " https://w\nquorum one\n", ":1", "not a witness's public key"},
		"no url":             {"witness one " + k1 + "\nquorum one\n", ":1", "witness <name> <vkey> <url>"},
		"plain http":         {"witness one " + k1 + " http://w1.example\nquorum one\n", ":1", "not an https:// URL"},
		"shared key":         {w1 + "witness two " + k1 + " https://w2\nquorum one\n", ":2", "is the key of one"},
		"same name":          {w1 + "group one any one\nquorum one\n", ":2", "already a witness or group"},
		"undefined member":   {w1 + "group g any one two\nquorum g\n", ":2", "no witness or group on a line above"},
		"member later":       {w1 + "group g any one h\ngroup h any one\nquorum g\n", ":2", "no witness or group on a line above"},
		"threshold":          {w1 + "group g 2 one\nquorum g\n", ":2", "from 1 to its 1 members"},
		"threshold zero":     {w1 + "group g 0 one\nquorum g\n", ":2", "from 1 to its 1 members"},
		"twice member":       {w1 + "group g any one one\nquorum g\n", ":2", "names one twice"},
		"no quorum":          {w1, ":1", "no quorum line"},
		"two quorums":        {w1 + "quorum one\nquorum none\n", ":3", "second quorum line (the first is line 2)"},
		"unknown quorum":     {w1 + "quorum g\n", ":2", "the quorum g is no witness or group"},
		"no witness":         {"quorum none\n", ":1", "names no witness"},
		"bad log":            {"log nonsense\n" + w1 + "quorum one\n", ":1", "not a signed-note Ed25519 verifier key"},
		"second witness":     {w1 + "witness two " + k2 + " https://w2 extra\nquorum one\n", ":2", "witness <name> <vkey> <url>"},
	} {
		_, dir, err := loadWithFile(t, witnessPolicy(t, `policy_file: "w.policy"`), "w.policy", c.text)
		if !blocking.Has(err, blocking.PolicyWitnessInvalid) || !strings.Contains(err.Error(), filepath.Join(dir, "w.policy")+c.at+":") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", name, err)
		}
	}
	_, err := loadText(t, witnessPolicy(t, fmt.Sprintf("policy: %q", w1+"quorum two\n")))
	if !blocking.Has(err, blocking.PolicyWitnessInvalid) || !strings.Contains(err.Error(), "(line 2 of the text)") || !strings.Contains(err.Error(), "witnessing.policy: quorum") {
		t.Errorf("inline: %v", err)
	}
	for name, section := range map[string]string{
		"missing file": `policy_file: "absent.policy"`,
		"two forms":    fmt.Sprintf("policy_file: \"w.policy\"\npolicy: %q", w1+"quorum one\n"),
		"no quorum":    fmt.Sprintf(`witnesses: one: {key: %q, url: "https://w1.example"}`, k1),
	} {
		_, err := loadText(t, witnessPolicy(t, section))
		if !blocking.Has(err, blocking.PolicyWitnessInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// FuzzParseWitnessPolicy: any text parses or is refused with located
// policy_witness_invalid refusals, never a panic; what parses names at
// least one witness, each with a key, and a quorum no witness count
// can exceed.
func FuzzParseWitnessPolicy(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/tlog-policy/*.policy")
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		w, err := host.ParseWitnessPolicy("f.policy", text)
		if err != nil {
			list, ok := err.(blocking.List)
			if !ok || len(list) == 0 {
				t.Fatalf("not a refusal list: %v", err)
			}
			for _, e := range list {
				if e.Code != blocking.PolicyWitnessInvalid || !strings.HasPrefix(e.Pos, "f.policy:") {
					t.Fatalf("refusal %v", e)
				}
			}
			return
		}
		if len(w.Witnesses) == 0 || w.Quorum > len(w.Witnesses) {
			t.Fatalf("parsed %+v", w)
		}
		for n, wt := range w.Witnesses {
			if wt.Verifier() == nil {
				t.Fatalf("witness %s has no key", n)
			}
		}
	})
}

// TestWitnessPolicySeeds: the fuzz seeds in testdata/tlog-policy parse,
// but bad.policy, which is refused line by line.
func TestWitnessPolicySeeds(t *testing.T) {
	seeds, _ := filepath.Glob("testdata/tlog-policy/*.policy")
	if len(seeds) < 4 {
		t.Fatalf("seeds %v", seeds)
	}
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		_, err = host.ParseWitnessPolicy(s, b)
		if filepath.Base(s) == "bad.policy" {
			if l, ok := err.(blocking.List); !ok || len(l) != 7 {
				t.Errorf("%s: %v", s, err)
			}
		} else if err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
}
