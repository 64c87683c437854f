package main

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/oa-dev/oa/internal/canonical"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/schemas"
	"github.com/oa-dev/oa/signing"
	"github.com/oa-dev/oa/testkit/interoptest"
	"github.com/oa-dev/oa/testkit/registrytest"
)

// cosign3 runs stock cosign v3 offline (key-based, no transparency log,
// no signing config fetched) in p's folder and requires it to succeed.
func (p *publisher) cosign3(args ...string) string {
	p.t.Helper()
	cmd := exec.Command(interoptest.Tool(p.t, "cosign3"), args...)
	cmd.Dir = p.dir
	cmd.Env = interoptest.Env(p.t)
	out, err := cmd.CombinedOutput()
	if err != nil {
		p.t.Fatalf("cosign %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// conformancePredicate is the conformance report `oa attest` would sign for
// pinned with the authority key, for cosign to attest instead.
func (p *publisher) conformancePredicate(pinned string) string {
	p.t.Helper()
	ctx := context.Background()
	ref, err := oci.ParseRef(pinned, oci.RefOptions{})
	if err != nil {
		p.t.Fatal(err)
	}
	target, err := oci.Open(ctx, ref, oci.OpenOptions{})
	if err != nil {
		p.t.Fatal(err)
	}
	desc, err := oci.Resolve(ctx, target, ref.Digest.String())
	if err != nil {
		p.t.Fatal(err)
	}
	art, err := oci.Fetch(ctx, target, desc, schemas.CheckFetchedIR)
	if err != nil {
		p.t.Fatal(err)
	}
	pubPEM, err := os.ReadFile(p.path("authority.pub"))
	if err != nil {
		p.t.Fatal(err)
	}
	authority, err := signing.LoadVerifier(pubPEM)
	if err != nil {
		p.t.Fatal(err)
	}
	report := signing.Conformance(art, authority.KeyID())
	if err := report.Err(); err != nil {
		p.t.Fatal(err)
	}
	predicate, err := canonical.Marshal(report)
	if err != nil {
		p.t.Fatal(err)
	}
	path := p.path("conformance.json")
	if err := os.WriteFile(path, predicate, 0o600); err != nil {
		p.t.Fatal(err)
	}
	return path
}

// TestCosign3SignedIsVerifiedAdmittedAndCopied: an artifact oa pushed and
// stock cosign v3 signed and attested (sigstore bundles, under the
// referrers tag of a registry without the referrers API) verifies, is
// admitted, and survives an air-gapped copy through a layout, where oa
// copy counts what it carried.
func TestCosign3SignedIsVerifiedAdmittedAndCopied(t *testing.T) {
	p := newPublisher(t)
	outside, inside := registrytest.Start(t), registrytest.Start(t)
	pinned := strings.TrimSpace(p.ok("push", p.bundle, outside.Host()+"/oa/clinic"))
	p.cosign3("sign", "--tlog-upload=false", "--use-signing-config=false", "-y", "--key", p.path("publisher.key"), pinned)
	p.cosign3("attest", "--tlog-upload=false", "--use-signing-config=false", "-y", "--key", p.path("authority.key"),
		"--type", signing.ConformancePredicateType, "--predicate", p.conformancePredicate(pinned), pinned)

	var v struct {
		Verified bool           `json:"verified"`
		Links    []signing.Link `json:"links"`
	}
	out := p.ok("verify", "--json", pinned, "--publisher-key", p.path("publisher.pub"), "--authority-key", p.path("authority.pub"))
	wantJSON(t, "verify --json", out, &v)
	if !v.Verified {
		t.Fatalf("verify --json: verified = false, want true:\n%s", out)
	}
	for _, l := range v.Links[2:] {
		if l.Form != signing.FormBundle {
			t.Fatalf("link %s verified in form %q, want %q", l.Name, l.Form, signing.FormBundle)
		}
	}
	if out := p.verify(pinned); !strings.Contains(out, "(bundle)") {
		t.Fatalf("verify does not say the signature is a bundle:\n%s", out)
	}

	medium := p.path("medium")
	onMedium, errOut, code := runCLI(t, "copy", "--require-signed", "--to-oci-layout", pinned, medium+":1.2.0")
	wantExit(t, "copy to the medium", code, 0, onMedium, errOut)
	wantHas(t, "copy to the medium", errOut, "copied 1 signature(s) and 1 attestation(s) (2 as sigstore bundles)")
	wantLacks(t, "copy to the medium", errOut, "warning")
	var copied struct {
		Reference    string   `json:"reference"`
		Copied       []string `json:"copied"`
		Signatures   int      `json:"signatures"`
		Attestations int      `json:"attestations"`
	}
	out = p.ok("copy", "--json", "--from-oci-layout", strings.TrimSpace(onMedium), inside.Host()+"/mirror/clinic:1.2.0")
	wantJSON(t, "copy --json", out, &copied)
	if copied.Signatures != 1 {
		t.Errorf("copy --json: %d signatures, want 1", copied.Signatures)
	}
	if copied.Attestations != 1 {
		t.Errorf("copy --json: %d attestations, want 1", copied.Attestations)
	}
	if got := strings.Join(copied.Copied, ","); got != "artifact,bundles" {
		t.Errorf("copy --json: copied %q, want artifact,bundles", got)
	}
	if t.Failed() {
		t.FailNow()
	}
	landed := copied.Reference
	p.verify(landed)
	p.cosign3("verify", "--insecure-ignore-tlog=true", "--key", p.path("publisher.pub"), landed)

	p.ok("host", "init", "--publisher-key", p.path("publisher.pub"), "--authority-key", p.path("authority.pub"))
	if out := p.ok("admit", landed, "--as", "Dr Ada"); !strings.Contains(out, "admitted clinic-triage@1.2.0 as #1") {
		t.Fatalf("admit: %s", out)
	}
	if out := p.ok("status", landed); !strings.Contains(out, "active") {
		t.Fatalf("status: %s", out)
	}
}

// TestCopyUnsignedWarnsOrRefuses: copying an artifact with no signature and
// no attestation says so on a warning line; with --require-signed it is
// refused (exit 2) and nothing reaches the destination.
func TestCopyUnsignedWarnsOrRefuses(t *testing.T) {
	p := newPublisher(t)
	reg := registrytest.Start(t)
	pinned := strings.TrimSpace(p.ok("push", p.bundle, reg.Host()+"/oa/clinic"))
	refused := p.path("refused")
	p.refused("copy_unsigned", "copy", "--require-signed", "--to-oci-layout", pinned, refused+":1.2.0")
	if _, err := os.Stat(refused); !os.IsNotExist(err) {
		t.Fatalf("a refused copy made the destination layout: %v", err)
	}
	out, errOut, code := runCLI(t, "copy", "--to-oci-layout", pinned, p.path("unsigned")+":1.2.0")
	wantExit(t, "unsigned copy", code, 0, out, errOut)
	wantHas(t, "unsigned copy", errOut, "copied 0 signature(s) and 0 attestation(s)", "warning: the source holds no signature and no attestation")
	p.ok("sign", "--key", p.path("publisher.key"), pinned)
	out, errOut, code = runCLI(t, "copy", "--require-signed", "--to-oci-layout", pinned, p.path("signed")+":1.2.0")
	wantExit(t, "signed, unattested copy", code, 0, out, errOut)
	wantHas(t, "signed, unattested copy", errOut, "warning: the source holds no attestation")
}

// TestSignBundleIsVerifiedByCosign3: `oa sign --bundle` and `oa attest
// --bundle` write what stock cosign v3 verifies, and oa verify reports the
// bundle form.
func TestSignBundleIsVerifiedByCosign3(t *testing.T) {
	p := newPublisher(t)
	reg := registrytest.Start(t)
	pinned := strings.TrimSpace(p.ok("push", p.bundle, reg.Host()+"/oa/clinic"))
	p.ok("sign", "--bundle", "--key", p.path("publisher.key"), pinned)
	p.ok("attest", "--bundle", "--key", p.path("authority.key"), pinned)
	p.cosign3("verify", "--insecure-ignore-tlog=true", "--key", p.path("publisher.pub"), pinned)
	p.cosign3("verify-attestation", "--insecure-ignore-tlog=true", "--key", p.path("authority.pub"), "--type", signing.ConformancePredicateType, pinned)
	out := p.verify(pinned)
	if strings.Count(out, "(bundle)") != 2 {
		t.Fatalf("verify does not report both links in the bundle form:\n%s", out)
	}
}
