package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oa-dev/oa/testkit/interoptest"
	"github.com/oa-dev/oa/testkit/registrytest"
	"github.com/oa-dev/oa/testkit/sigstoretest"
)

// A keyless publisher end to end, offline: a test CA and TSA, the release
// signed and its SLSA provenance attested by stock cosign v2 with a
// certificate (`--certificate … --certificate-chain … --tlog-upload=false
// --timestamp-server-url`), the conformance attestation by `oa attest`
// with the authority's key; `oa verify` by identity, then a host whose
// policy trusts the publisher by identity and its trusted root, `oa admit`,
// `oa status`, a changed root, and attestation rules in enforce and warn
// modes.

const (
	klSubject = "https://github.com/acme/workers/.github/workflows/release.yml@refs/tags/v1.2.0"
	klIssuer  = "https://token.actions.githubusercontent.com"
	klSLSA    = "https://slsa.dev/provenance/v1"
)

// keyless is a publisher signing with a certificate of a test CA.
type keyless struct {
	*publisher
	ca                     *sigstoretest.CA
	tsa                    string
	cert, chain, key, root string
	leaf                   *sigstoretest.Leaf
}

func newKeyless(t *testing.T) *keyless {
	p := newPublisher(t)
	k := &keyless{publisher: p, ca: sigstoretest.NewCA(t)}
	k.tsa = k.ca.ServeTSA(t)
	now := time.Now()
	k.leaf = k.ca.Leaf(t, klSubject, klIssuer, now.Add(-time.Hour), now.Add(time.Hour))
	k.cert, k.chain, k.key = k.leaf.WriteFiles(t, p.dir)
	k.root = p.path("trusted_root.json")
	if err := os.WriteFile(k.root, k.ca.TrustedRoot(t, true), 0o600); err != nil {
		t.Fatal(err)
	}
	return k
}

// cosign runs stock cosign v2 offline with the leaf key's password.
func (k *keyless) cosign(args ...string) string {
	k.t.Helper()
	cmd := exec.Command(interoptest.Tool(k.t, "cosign"), args...)
	cmd.Dir = k.dir
	cmd.Env = interoptest.Env(k.t, "COSIGN_PASSWORD="+sigstoretest.Password)
	out, err := cmd.CombinedOutput()
	if err != nil {
		k.t.Fatalf("cosign %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// certFlags are cosign's flags to sign with the leaf certificate, offline,
// with a timestamp.
func (k *keyless) certFlags() []string {
	return []string{"--key", k.key, "--certificate", k.cert, "--certificate-chain", k.chain, "--tlog-upload=false", "--timestamp-server-url", k.tsa, "-y"}
}

// identityArgs are oa verify's flags for the publisher's identity.
func (k *keyless) identityArgs(subject string) []string {
	return []string{"--certificate-identity", subject, "--certificate-oidc-issuer", klIssuer, "--trusted-root", k.root, "--authority-key", k.path("authority.pub")}
}

// provenance writes a SLSA v1 provenance predicate naming repository.
func (k *keyless) provenance(repository string) string {
	k.t.Helper()
	path := k.path("provenance.json")
	pred := `{"buildDefinition":{"buildType":"https://actions.github.io/buildtypes/workflow/v1","externalParameters":{"workflow":{"ref":"refs/tags/v1.2.0","repository":"` + repository + `","path":".github/workflows/release.yml"}}},"runDetails":{"builder":{"id":"https://github.com/actions/runner"}}}`
	if err := os.WriteFile(path, []byte(pred), 0o600); err != nil {
		k.t.Fatal(err)
	}
	return path
}

// policyWith is the host's starter policy with the publisher trusted by
// identity (its root under roots/) and extra CUE appended.
func (k *keyless) policyWith(extra string) {
	k.t.Helper()
	home := os.Getenv("OA_HOME")
	policy := filepath.Join(home, "policy.cue")
	b, err := os.ReadFile(policy)
	if err != nil {
		k.t.Fatal(err)
	}
	base, _, _ := strings.Cut(string(b), "\n// keyless\n")
	add := "\n// keyless\npublishers: ci: {\n\tidentity: {issuer: \"" + klIssuer + "\", subject_regexp: \"^https://github\\\\.com/acme/workers/\\\\.github/workflows/release\\\\.yml@refs/tags/\"}\n\ttrusted_root: \"roots/ci.json\"\n}\n" + extra
	if err := os.WriteFile(policy, []byte(base+add), 0o600); err != nil {
		k.t.Fatal(err)
	}
}

func TestKeylessPublisherAdmittedEndToEnd(t *testing.T) {
	k := newKeyless(t)
	reg := registrytest.Start(t)
	pinned := strings.TrimSpace(k.ok("push", k.bundle, reg.Host()+"/acme/clinic"))
	k.cosign(append(append([]string{"sign"}, k.certFlags()...), pinned)...)
	k.ok("attest", "--key", k.path("authority.key"), pinned)

	// oa verify by identity, as cosign verify would.
	out := k.ok(append([]string{"verify", pinned}, k.identityArgs(klSubject)...)...)
	if !strings.Contains(out, "signed by "+klSubject+" @ "+klIssuer) {
		t.Fatalf("verify does not name the signer:\n%s", out)
	}
	k.cosign("verify", "--trusted-root", k.root, "--insecure-ignore-tlog", "--insecure-ignore-sct", "--use-signed-timestamps",
		"--certificate-identity", klSubject, "--certificate-oidc-issuer", klIssuer, pinned)
	k.refused("certificate_identity_mismatch", append([]string{"verify", pinned}, k.identityArgs("https://github.com/evil/workers/.github/workflows/release.yml@refs/tags/v1.2.0")...)...)
	k.refused("trusted_root_invalid", "verify", pinned, "--certificate-identity", klSubject, "--certificate-oidc-issuer", klIssuer, "--trusted-root", k.path("missing.json"), "--authority-key", k.path("authority.pub"))
	k.refused("identity_invalid", "verify", pinned, "--certificate-identity", klSubject, "--trusted-root", k.root, "--authority-key", k.path("authority.pub"))

	// A host that trusts the publisher by identity admits it and records
	// who signed and the root's digest.
	k.ok("host", "init", "--authority-key", k.path("authority.pub"))
	home := os.Getenv("OA_HOME")
	if err := os.MkdirAll(filepath.Join(home, "roots"), 0o755); err != nil {
		t.Fatal(err)
	}
	rootBytes := k.ca.TrustedRoot(t, true)
	if err := os.WriteFile(filepath.Join(home, "roots", "ci.json"), rootBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	k.policyWith("")
	out = k.ok("policy", "check")
	wantHas(t, "policy check does not describe the signers", out, "publisher ci: identity ~^https://github", "authority authority: sha256:")
	out = k.ok("admit", pinned, "--as", "Dr Ada")
	wantHas(t, "admit", out, "admitted clinic-triage@1.2.0 as #1", "publisher ci signed as "+klSubject)
	out = k.ok("status", pinned)
	wantHas(t, "oa status", out, "ci ("+klSubject+" @ "+klIssuer+")", "active")
	out = k.ok("admissions", "show", strings.SplitN(pinned, "@", 2)[1], "--json")
	wantHas(t, "the admission record does not name the signer and root", out, `"subject": "`+klSubject, `"trustedRootDigest": "sha256:`)

	// A changed root is a changed policy: the admission no longer holds.
	if err := os.WriteFile(filepath.Join(home, "roots", "ci.json"), sigstoretest.NewCA(t).TrustedRoot(t, true), 0o600); err != nil {
		t.Fatal(err)
	}
	k.refused("admission_mismatched", "status", pinned)
	k.refused("certificate_untrusted", "admit", pinned, "--as", "Dr Ada", "--dry-run")
	if err := os.WriteFile(filepath.Join(home, "roots", "ci.json"), rootBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	k.ok("status", pinned)

	// "Certificate valid now" is explicit and shown.
	k.policyWith("publishers: ci: certificate_valid_now: true\n")
	if out := k.ok("admit", pinned, "--as", "Dr Ada", "--dry-run"); !strings.Contains(out, "✓") {
		t.Fatalf("admit with valid-now:\n%s", out)
	}
	k.ok("admit", pinned, "--as", "Dr Ada")
	if out := k.ok("status", pinned); !strings.Contains(out, "certificate valid now accepted") {
		t.Fatalf("status does not show that a certificate valid now is accepted:\n%s", out)
	}
	if out := k.ok("status", pinned, "--json"); !strings.Contains(out, `"certificateValidNow": true`) {
		t.Fatalf("status --json does not show that a certificate valid now is accepted:\n%s", out)
	}

	// Attestation rules on a SLSA provenance made by stock cosign attest.
	k.cosign(append(append([]string{"attest"}, k.certFlags()...), "--type", "slsaprovenance1", "--predicate", k.provenance("https://github.com/acme/worker-sources"), pinned)...)
	rule := func(repository, mode string) string {
		return "attestation_rules: provenance: {\n\tpredicate_type: \"" + klSLSA + "\"\n\tmode: \"" + mode + "\"\n\tconstraint: \"\"\"\n\t\tbuildDefinition: externalParameters: workflow: repository: \"" + repository + "\"\n\t\t\"\"\"\n}\n"
	}
	k.policyWith(rule("https://github.com/acme/worker-sources", "enforce"))
	if out := k.ok("admit", pinned, "--as", "Dr Ada"); !strings.Contains(out, "attestation_rules") {
		t.Fatalf("admit under a satisfied rule:\n%s", out)
	}
	k.policyWith(rule("https://github.com/acme/other", "enforce"))
	out = k.refused("attestation_rule_failed", "admit", pinned, "--as", "Dr Ada")
	wantHas(t, "the refusal does not name the rule and field, or names the value", out, "rule provenance: field buildDefinition.externalParameters.workflow.repository")
	wantLacks(t, "the refusal does not name the rule and field, or names the value", out, "worker-sources")
	k.policyWith(rule("https://github.com/acme/other", "warn"))
	stdout, stderr, code := runCLI(t, "admit", pinned, "--as", "Dr Ada")
	wantExit(t, "admit under a warn rule", code, 0, stdout, stderr)
	wantHas(t, "admit under a warn rule", stderr, "warning: rule provenance: field buildDefinition.externalParameters.workflow.repository")
	if out := k.ok("status", pinned); !strings.Contains(out, "warning: rule provenance") {
		t.Fatalf("status does not print the warning:\n%s", out)
	}
	if out := k.ok("admissions", "show", strings.SplitN(pinned, "@", 2)[1], "--json"); !strings.Contains(out, `"warnings"`) {
		t.Fatalf("the admission does not record the warning:\n%s", out)
	}
	k.policyWith(strings.ReplaceAll(rule("x", "enforce"), klSLSA, "https://example.com/absent/v1"))
	k.refused("attestation_rule_missing", "admit", pinned, "--as", "Dr Ada", "--dry-run")
}

// klAuthority is the identity of a conformance authority that attests in
// CI without a key.
const klAuthority = "https://github.com/acme/conformance/.github/workflows/check.yml@refs/heads/main"

// TestKeylessAuthorityAndAudit: a keyless authority end to end, offline.
// The publisher signs and the authority attests the conformance predicate
// (written by `oa attest --predicate-out`) with stock cosign and
// certificates of a test CA; `oa verify` takes both by identity; a host
// trusting both by identity admits and binds the release; `oa audit
// export` carries the policy's trusted root and `oa audit verify` checks
// the chain with the auditor's identities and trusted root, naming who
// signed, and refuses another identity.
func TestKeylessAuthorityAndAudit(t *testing.T) {
	k := newKeyless(t)
	reg := registrytest.Start(t)
	pinned := strings.TrimSpace(k.ok("push", k.bundle, reg.Host()+"/acme/clinic"))
	k.cosign(append(append([]string{"sign"}, k.certFlags()...), pinned)...)

	authDir := k.path("authority-ci")
	if err := os.MkdirAll(authDir, 0o700); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	authCert, authChain, authKey := k.ca.Leaf(t, klAuthority, klIssuer, now.Add(-time.Hour), now.Add(time.Hour)).WriteFiles(t, authDir)
	predicate := k.path("conformance.json")
	_, errOut, code := runCLI(t, "attest", pinned, "--predicate-out", predicate)
	wantExit(t, "attest --predicate-out without --authority", code, 2, "", errOut)
	wantHas(t, "attest --predicate-out without --authority", errOut, "authority")
	k.ok("attest", pinned, "--predicate-out", predicate, "--authority", "acme-conformance")
	k.cosign("attest", "--key", authKey, "--certificate", authCert, "--certificate-chain", authChain, "--tlog-upload=false", "--timestamp-server-url", k.tsa, "-y",
		"--type", "https://oa.dev/attestations/conformance/v1", "--predicate", predicate, pinned)

	// oa verify with both signers by identity, the authority sharing the
	// publisher's --trusted-root.
	publisherID := []string{"--certificate-identity", klSubject, "--certificate-oidc-issuer", klIssuer, "--trusted-root", k.root}
	authorityID := func(subject string) []string {
		return []string{"--authority-certificate-identity-regexp", subject, "--authority-certificate-oidc-issuer", klIssuer}
	}
	out := k.ok(append(append([]string{"verify", pinned}, publisherID...), authorityID("^https://github\\.com/acme/conformance/")...)...)
	wantHas(t, "verify does not name both signers", out, "signed by "+klSubject, "signed by "+klAuthority+" @ "+klIssuer)
	// Stock cosign agrees on the authority's attestation (v2 reads a
	// trusted root only for new-format bundles: the CA chain instead).
	k.cosign("verify-attestation", "--certificate-chain", authChain, "--insecure-ignore-tlog", "--insecure-ignore-sct",
		"--type", "https://oa.dev/attestations/conformance/v1", "--certificate-identity", klAuthority, "--certificate-oidc-issuer", klIssuer, pinned)
	k.refused("certificate_identity_mismatch", append(append([]string{"verify", pinned}, publisherID...), authorityID("^https://github\\.com/evil/")...)...)
	// The authority's own trusted root, when given, is the one used.
	k.refused("trusted_root_invalid", append(append(append([]string{"verify", pinned}, publisherID...), authorityID("conformance")...), "--authority-trusted-root", k.path("missing.json"))...)
	// An authority named twice (key and identity) is a usage error.
	if _, _, code := runCLI(t, append(append(append([]string{"verify", pinned}, publisherID...), authorityID("conformance")...), "--authority-key", k.path("authority.pub"))...); code == 0 {
		t.Fatal("verify accepted both --authority-key and an authority identity")
	}

	// A host trusting both by identity admits the release, naming both
	// signers, and binds it.
	k.ok("host", "init", "--authority-key", k.path("authority.pub"))
	home := os.Getenv("OA_HOME")
	if err := os.MkdirAll(filepath.Join(home, "roots"), 0o755); err != nil {
		t.Fatal(err)
	}
	rootBytes, err := os.ReadFile(k.root)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "roots", "ci.json"), rootBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	k.policyWith("authorities: conformance: {\n\tidentity: {issuer: \"" + klIssuer + "\", subject: \"" + klAuthority + "\"}\n\ttrusted_root: \"roots/ci.json\"\n}\n")
	out = k.ok("admit", pinned, "--as", "Dr Ada")
	wantHas(t, "admit does not name both signers", out, "publisher ci signed as "+klSubject, "authority conformance attested as "+klAuthority)
	k.ok("registry", "init")
	k.ok("registry", "sign", "--as", "Dr Ada")
	k.ok("connection", "add-stdio", "sandbox", "--connector", "sandbox.records", "--as", "Dr Ada", "--", "builtin:sandbox-records")
	k.ok("connection", "verify", "sandbox", "--as", "Dr Ada")
	k.ok("bind", pinned, "--deployment", "clinic", "--model", "claude-test", "--as", "Dr Ada", "--yes")
	bundle := k.path("clinic.audit.tar")
	k.ok("audit", "export", "-o", bundle)
	hostKey := k.path("host.pub")
	hostPub, err := os.ReadFile(filepath.Join(home, "keys", "host.pub"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hostKey, hostPub, 0o600); err != nil {
		t.Fatal(err)
	}

	// The auditor's machine: no host folder; their own copy of the
	// trusted root; identities, not keys.
	t.Setenv("OA_HOME", filepath.Join(t.TempDir(), "absent"))
	auditorRoot := filepath.Join(t.TempDir(), "auditor-root.json")
	if err := os.WriteFile(auditorRoot, rootBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	auditArgs := func(publisher, authority []string) []string {
		return append(append([]string{"audit", "verify", bundle, "--host-key", hostKey, "--trusted-root", auditorRoot}, publisher...), authority...)
	}
	pubID := []string{"--certificate-identity-regexp", "^https://github\\.com/acme/workers/", "--certificate-oidc-issuer", klIssuer}
	out = k.ok(auditArgs(pubID, authorityID("^https://github\\.com/acme/conformance/"))...)
	for _, want := range []string{"signed by " + klSubject, "signed by " + klAuthority, "publisher ci as " + klSubject, "audit ok"} {
		if !strings.Contains(out, want) {
			t.Fatalf("audit verify lacks %q:\n%s", want, out)
		}
	}
	// Another publisher identity breaks the signature link; the key of a
	// publisher the host did not admit with breaks it too.
	k.refused("certificate_identity_mismatch", auditArgs([]string{"--certificate-identity", "https://github.com/evil/workers/.github/workflows/release.yml@refs/tags/v1.2.0", "--certificate-oidc-issuer", klIssuer}, authorityID("conformance"))...)
	// Another CA's trusted root at the auditor's: nothing chains to it.
	otherRoot := filepath.Join(t.TempDir(), "other-root.json")
	if err := os.WriteFile(otherRoot, sigstoretest.NewCA(t).TrustedRoot(t, true), 0o600); err != nil {
		t.Fatal(err)
	}
	k.refused("certificate_untrusted", append(auditArgs(pubID, authorityID("conformance")), "--trusted-root", otherRoot)...)

	// A conformance attestation by the publisher's own certificate is
	// never the authority's, whatever identity the authority is given.
	k.cosign(append(append([]string{"attest"}, k.certFlags()...), "--type", "https://oa.dev/attestations/conformance/v1", "--predicate", predicate, pinned)...)
	k.refused("attestation_by_publisher", append(append([]string{"verify", pinned}, publisherID...), authorityID("^https://github\\.com/acme/")...)...)
}
