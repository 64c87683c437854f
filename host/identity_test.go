package host_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/testkit/sigstoretest"
)

// TestPolicyBeforeIdentitiesKeepsItsDigest: a policy written before
// identities and attestation rules existed (keys only, with a limits
// section) has the digest main's code gave it, so admissions made under it
// stay active.
func TestPolicyBeforeIdentitiesKeepsItsDigest(t *testing.T) {
	p, err := host.LoadPolicy(filepath.Join("testdata", "policy_before_identities.cue"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.Digest(), "sha256:18cf9619c574fae3de10b541b284909cbdb9315a0dced3c470b148c860c5276f"; got != want {
		t.Fatalf("digest %s; main's code gives %s", got, want)
	}
}

// identityPolicy is a starter policy with publisher ci trusted by identity
// with the trusted root at roots/ci.json, plus extra.
func identityPolicy(t *testing.T, extra string) string {
	good := host.StarterPolicy(host.InitOptions{Host: "h", Authorities: map[string][]byte{"lab": newPub(t)}})
	return good + `publishers: ci: {
	identity: {issuer: "https://token.actions.githubusercontent.com", subject_regexp: "^https://github\\.com/acme/"}
	trusted_root: "roots/ci.json"
}
` + extra
}

func TestIdentityPolicy(t *testing.T) {
	ca := sigstoretest.NewCA(t)
	write := func(t *testing.T, text string, root []byte) string {
		dir := t.TempDir()
		if root != nil {
			os.MkdirAll(filepath.Join(dir, "roots"), 0o755)
			os.WriteFile(filepath.Join(dir, "roots", "ci.json"), root, 0o644)
		}
		p := filepath.Join(dir, "policy.cue")
		os.WriteFile(p, []byte(text), 0o644)
		return p
	}
	root := ca.TrustedRoot(t, true)

	t.Run("loads, and the root is part of the digest", func(t *testing.T) {
		p1, err := host.LoadPolicy(write(t, identityPolicy(t, ""), root))
		if err != nil {
			t.Fatal(err)
		}
		ci := p1.Publishers["ci"]
		if ci.Verifier().Identity() == nil || !strings.HasPrefix(ci.TrustedRootDigest, "sha256:") || !strings.Contains(ci.Describe(), "identity") {
			t.Fatalf("%+v", ci)
		}
		text := identityPolicy(t, "")
		a, _ := host.LoadPolicy(write(t, text, root))
		b, _ := host.LoadPolicy(write(t, text, root))
		c, err := host.LoadPolicy(write(t, text, sigstoretest.NewCA(t).TrustedRoot(t, true)))
		if err != nil || a.Digest() != b.Digest() || a.Digest() == c.Digest() {
			t.Fatalf("same root %s/%s, other root %s (%v)", a.Digest(), b.Digest(), c.Digest(), err)
		}
	})

	for name, c := range map[string]struct {
		text string
		root []byte
		want blocking.Code
		pos  string
	}{
		"missing root":           {identityPolicy(t, ""), nil, blocking.TrustedRootInvalid, "publishers.ci.trusted_root"},
		"not a root":             {identityPolicy(t, ""), []byte(`{"mediaType":"x"}`), blocking.TrustedRootInvalid, "publishers.ci.trusted_root"},
		"subject and regexp":     {identityPolicy(t, `publishers: ci: identity: subject: "x"`+"\n"), root, blocking.IdentityInvalid, "publishers.ci.identity"},
		"no issuer":              {strings.Replace(identityPolicy(t, ""), `issuer: "https://token.actions.githubusercontent.com", `, "", 1), root, blocking.IdentityInvalid, "publishers.ci.identity"},
		"bad regexp":             {strings.Replace(identityPolicy(t, ""), `^https://github\\.com/acme/`, `(`, 1), root, blocking.IdentityInvalid, "publishers.ci.identity"},
		"key and identity":       {identityPolicy(t, `publishers: ci: key: "-----BEGIN PUBLIC KEY-----\nAAAA"`+"\n"), root, blocking.PolicyInvalid, ""},
		"authority is publisher": {identityPolicy(t, `authorities: ci2: {identity: {issuer: "https://token.actions.githubusercontent.com", subject_regexp: "^https://github\\.com/acme/"}, trusted_root: "roots/ci.json"}`+"\n"), root, blocking.PolicyAuthorityIsPublisher, "authorities.ci2"},
		"rule not CUE":           {identityPolicy(t, `attestation_rules: r: {predicate_type: "https://slsa.dev/provenance/v1", constraint: "a: {"}`+"\n"), root, blocking.AttestationRuleInvalid, "attestation_rules.r.constraint"},
		"rule imports os":        {identityPolicy(t, `attestation_rules: r: {predicate_type: "https://slsa.dev/provenance/v1", constraint: "import \"tool/exec\"\na: 1"}`+"\n"), root, blocking.AttestationRuleInvalid, "attestation_rules.r.constraint"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := host.LoadPolicy(write(t, c.text, c.root))
			l := blocking.Refusals(err)
			if len(l) == 0 || l[0].Code != c.want || !strings.Contains(l[0].Path, c.pos) {
				t.Fatalf("LoadPolicy = %v; want %s at %s", err, c.want, c.pos)
			}
		})
	}
}

// TestOpenWithGivenTrustedRoots: a host opened with its trusted roots
// given (as an audit rebuilds one from a bundle) takes them from the map
// only: the file the policy names, even when present on disk, is never
// read, so a policy naming a file of the machine (an absolute path, a
// path out of the folder) reads nothing of it; with the bytes given, the
// policy and its digest are the host's own.
func TestOpenWithGivenTrustedRoots(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	if err := host.Init(home, host.InitOptions{Host: "h", Authorities: map[string][]byte{"lab": newPub(t)}, Publishers: map[string][]byte{"p": newPub(t)}}); err != nil {
		t.Fatal(err)
	}
	root := sigstoretest.NewCA(t).TrustedRoot(t, true)
	outside := filepath.Join(t.TempDir(), "elsewhere.json")
	for _, f := range []string{filepath.Join(home, "roots", "ci.json"), outside} {
		os.MkdirAll(filepath.Dir(f), 0o755)
		if err := os.WriteFile(f, root, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	policy := filepath.Join(home, host.PolicyFile)
	base, err := os.ReadFile(policy)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"roots/ci.json", outside} {
		text := string(base) + "publishers: ci: {\n\tidentity: {issuer: \"https://token.actions.githubusercontent.com\", subject: \"x\"}\n\ttrusted_root: \"" + name + "\"\n}\n"
		if err := os.WriteFile(policy, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		own, err := host.Open(ctx, home)
		if err != nil {
			t.Fatal(err)
		}
		own.Close()
		_, err = host.OpenWith(ctx, home, host.OpenOptions{TrustedRoots: map[string][]byte{}})
		if !blocking.Has(err, blocking.TrustedRootInvalid) {
			t.Fatalf("%s: a root absent from the map was read: %v", name, err)
		}
		given, err := host.OpenWith(ctx, home, host.OpenOptions{TrustedRoots: map[string][]byte{name: root}})
		if err != nil {
			t.Fatal(err)
		}
		if given.Policy.Digest() != own.Policy.Digest() {
			t.Fatalf("%s: the given root gives another policy digest", name)
		}
		given.Close()
	}
}
