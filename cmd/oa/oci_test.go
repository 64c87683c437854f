package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"oras.land/oras-go/v2/errdef"

	"github.com/oa-dev/oa/cmd/oa/internal/cli"
	"github.com/oa-dev/oa/compiler"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/testkit/interoptest"
	"github.com/oa-dev/oa/testkit/registrytest"
)

// publisher is a fresh $OA_HOME with a compiled example bundle and two key
// pairs: the publisher's and an independent conformance authority's.
type publisher struct {
	t      *testing.T
	dir    string
	bundle string
}

func newPublisher(t *testing.T) *publisher {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("OA_HOME", filepath.Join(dir, "home"))
	t.Setenv("COSIGN_PASSWORD", "correct horse")
	p := &publisher{t: t, dir: dir, bundle: filepath.Join(dir, "bundle")}
	p.ok("init", p.bundle)
	p.ok("keys", "generate", "--output-key-prefix", p.path("publisher"))
	p.ok("keys", "generate", "--output-key-prefix", p.path("authority"))
	return p
}

func (p *publisher) path(name string) string { return filepath.Join(p.dir, name) }

// ok runs oa and requires exit 0, returning standard output.
func (p *publisher) ok(args ...string) string {
	p.t.Helper()
	out, errOut, code := runCLI(p.t, args...)
	if code != 0 {
		p.t.Fatalf("oa %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// refused runs oa, requires exit 2 and that the output names code.
func (p *publisher) refused(code string, args ...string) string {
	p.t.Helper()
	out, errOut, status := runCLI(p.t, args...)
	what := "oa " + strings.Join(args, " ")
	wantExit(p.t, what, status, 2, out, errOut)
	wantHas(p.t, what, out+errOut, code)
	return out + errOut
}

// publish pushes, signs and attests the bundle at ref and returns ref@digest.
func (p *publisher) publish(ref string) string {
	p.t.Helper()
	pinned := strings.TrimSpace(p.ok("push", p.bundle, ref))
	p.ok("sign", "--key", p.path("publisher.key"), pinned)
	p.ok("attest", "--key", p.path("authority.key"), pinned)
	return pinned
}

func (p *publisher) verify(pinned string) string {
	p.t.Helper()
	return p.ok("verify", pinned, "--publisher-key", p.path("publisher.pub"), "--authority-key", p.path("authority.pub"))
}

func TestPublishChainOnLayoutAndRegistry(t *testing.T) {
	reg := registrytest.Start(t)
	for name, ref := range map[string]string{"layout": "clinic-triage", "registry": reg.Host() + "/oa/clinic-triage"} {
		t.Run(name, func(t *testing.T) {
			p := newPublisher(t)
			pinned := p.publish(ref)
			if !strings.Contains(pinned, ":1.2.0@sha256:") {
				t.Fatalf("push printed %q, want REF:VERSION@sha256:…", pinned)
			}
			out := p.verify(pinned)
			for _, link := range []string{"artifact", "worker_ir", "publisher_signature", "conformance_attestation"} {
				if !strings.Contains(out, link) {
					t.Fatalf("verify output lacks %s:\n%s", link, out)
				}
			}
			var v struct {
				Verified bool `json:"verified"`
				Links    []struct {
					Link string `json:"link"`
				} `json:"links"`
			}
			wantJSON(t, "verify --json", p.ok("verify", "--json", pinned, "--publisher-key", p.path("publisher.pub"), "--authority-key", p.path("authority.pub")), &v)
			if !v.Verified {
				t.Fatalf("verify --json: verified = false, want true: %+v", v)
			}
			if len(v.Links) != 4 {
				t.Fatalf("verify --json: %d links, want 4: %+v", len(v.Links), v.Links)
			}
			// The authority's key where the publisher's belongs, and the other way round.
			p.refused("signature_untrusted", "verify", pinned, "--publisher-key", p.path("authority.pub"), "--authority-key", p.path("publisher.pub"))
			p.refused("attestation_by_publisher", "verify", pinned, "--publisher-key", p.path("publisher.pub"), "--authority-key", p.path("publisher.pub"))
			tagOnly := strings.Split(pinned, "@")[0]
			msg := p.refused("reference_not_digest", "sign", "--key", p.path("publisher.key"), tagOnly)
			if !strings.Contains(msg, strings.Split(pinned, "@")[1]) {
				t.Fatalf("the refusal does not show the digest the tag resolves to:\n%s", msg)
			}
			// Admission on this host, from the same target.
			p.ok("host", "init", "--publisher-key", p.path("publisher.pub"), "--authority-key", p.path("authority.pub"))
			p.refused("person_missing", "admit", pinned)
			p.refused("reference_not_digest", "admit", tagOnly, "--as", "Dr Ada")
			if out := p.ok("admit", pinned, "--as", "Dr Ada"); !strings.Contains(out, "admitted clinic-triage@1.2.0 as #1") {
				t.Fatalf("admit: %s", out)
			}
			out = p.ok("status", pinned)
			wantHas(t, "oa status", out, "admission", "active")
			digest := strings.Split(pinned, "@")[1]
			p.ok("revoke", digest, "--reason", "test", "--as", "Dr Ada")
			p.refused("release_revoked", "admissions", "show", digest)
			p.refused("release_revoked", "status", pinned)
			p.refused("reference_invalid", "admissions", "show", "sha256:nothex")
			p.refused("reference_invalid", "revoke", "md5:abc", "--reason", "x", "--as", "Dr Ada")
			pulled := p.path("pulled")
			p.ok("pull", pinned, "-o", pulled)
			compiled := p.path("ir.json")
			p.ok("compile", "-o", compiled, p.bundle)
			a, _ := os.ReadFile(compiled)
			b, _ := os.ReadFile(filepath.Join(pulled, "worker.ir.json"))
			if len(a) == 0 {
				t.Fatal("the compiled IR is empty")
			}
			if string(a) != string(b) {
				t.Fatal("the pulled IR is not the compiled IR")
			}
		})
	}
}

func TestPushIsReproducibleAndHonoursSourceDateEpoch(t *testing.T) {
	p := newPublisher(t)
	first := p.ok("push", p.bundle, "clinic-triage:a")
	second := p.ok("push", p.bundle, "clinic-triage:b")
	digest := func(s string) string { return strings.TrimSpace(strings.Split(s, "@")[1]) }
	if digest(first) != digest(second) {
		t.Fatalf("the same bundle pushed twice gave %s and %s", first, second)
	}
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	stamped := p.ok("push", p.bundle, "clinic-triage:c")
	if digest(stamped) == digest(first) {
		t.Fatal("SOURCE_DATE_EPOCH did not stamp the manifest")
	}
	if again := p.ok("push", p.bundle, "clinic-triage:d"); digest(again) != digest(stamped) {
		t.Fatal("the same SOURCE_DATE_EPOCH gave another digest")
	}
	t.Setenv("SOURCE_DATE_EPOCH", "yesterday")
	p.refused("source_date_epoch_invalid", "push", p.bundle, "clinic-triage:e")
}

// TestAirGappedCopy moves a signed, attested artifact from one registry to
// a layout (the removable medium) and from there into another registry,
// where it still verifies.
func TestAirGappedCopy(t *testing.T) {
	p := newPublisher(t)
	outside, inside := registrytest.Start(t), registrytest.Start(t)
	pinned := p.publish(outside.Host() + "/oa/clinic")
	medium := p.path("medium")
	onMedium := strings.TrimSpace(p.ok("copy", "--to-oci-layout", pinned, medium+":1.2.0"))
	landed := strings.TrimSpace(p.ok("copy", "--from-oci-layout", onMedium, inside.Host()+"/mirror/clinic:1.2.0"))
	if strings.Split(landed, "@")[1] != strings.Split(pinned, "@")[1] {
		t.Fatalf("the digest changed in transit: %s vs %s", landed, pinned)
	}
	p.verify(landed)
}

func TestPullRefusesWhatIsNotAWorker(t *testing.T) {
	p := newPublisher(t)
	p.refused("artifact_not_found", "pull", "nothing-here@sha256:"+strings.Repeat("0", 64))
	if _, err := os.Stat(filepath.Join(os.Getenv("OA_HOME"), "oci", "nothing-here")); !os.IsNotExist(err) {
		t.Fatal("a refused pull created a layout")
	}
	p.refused("customer_state_credential_url", "push", "--source", "https://alice:s3cr3t@example.org/src", p.bundle, "clinic-triage:s")
	p.refused("reference_invalid", "pull", "Bad Name@sha256:1")
}

// TestOrasInterop: the stock oras CLI reads what oa pushed and moves it
// with its signature and attestation tags, and oa verifies what oras moved.
func TestOrasInterop(t *testing.T) {
	oras := interoptest.Tool(t, "oras")
	p := newPublisher(t)
	reg := registrytest.Start(t)
	pinned := p.publish(reg.Host() + "/oa/clinic")
	digest := strings.Split(pinned, "@")[1]
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(oras, args...)
		cmd.Dir = p.dir
		cmd.Env = interoptest.Env(t)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("oras %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	pulled := p.path("oras-pulled")
	run("pull", "--plain-http", "-o", pulled, pinned)
	compiled := p.path("ir.json")
	p.ok("compile", "-o", compiled, p.bundle)
	a, _ := os.ReadFile(compiled)
	b, err := os.ReadFile(filepath.Join(pulled, "worker.ir.json"))
	if err != nil {
		t.Fatalf("oras pull did not give the IR: %v", err)
	}
	if string(a) != string(b) {
		t.Fatal("oras pull gave an IR other than the compiled one")
	}
	if _, err := os.Stat(filepath.Join(pulled, "skills", "triage.md")); err != nil {
		t.Fatalf("oras pull did not give the skill doc: %v", err)
	}
	manifest := run("manifest", "fetch", "--plain-http", pinned)
	if !strings.Contains(manifest, `"artifactType":"application/vnd.oa.worker.v1"`) {
		t.Fatalf("oras sees another artifact type:\n%s", manifest)
	}
	hex := strings.TrimPrefix(digest, "sha256:")
	dst := reg.Host() + "/copied/clinic"
	run("cp", "--from-plain-http", "--to-plain-http", pinned, dst+":1.2.0")
	for _, suffix := range []string{".sig", ".att"} {
		run("cp", "--from-plain-http", "--to-plain-http", reg.Host()+"/oa/clinic:sha256-"+hex+suffix, dst+":sha256-"+hex+suffix)
	}
	p.verify(dst + "@" + digest)
	// And the other way: something oras pushed that is not a worker.
	if err := os.WriteFile(p.path("note.txt"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := run("push", "--plain-http", "--artifact-type", "application/vnd.example.note", reg.Host()+"/other/note:v1", "note.txt")
	i := strings.Index(out, "sha256:")
	if i < 0 {
		t.Fatalf("oras push printed no digest:\n%s", out)
	}
	p.refused("artifact_not_worker", "pull", reg.Host()+"/other/note@"+out[i:i+71])
}

// TestAttestWritesNothingWhenACheckFails pushes, with the library (the CLI
// would refuse it), an IR whose persona carries a phone number; attest must
// refuse with the failed check and leave no attestation behind.
func TestAttestWritesNothingWhenACheckFails(t *testing.T) {
	p := newPublisher(t)
	res, err := compiler.Compile(p.bundle)
	if err != nil {
		t.Fatal(err)
	}
	res.Worker.Persona.Text += " Call +1 415 555 0134 first."
	res.Worker.Persona.Digest = ir.DigestBytes([]byte(res.Worker.Persona.Text))
	b, err := ir.Encode(res.Worker)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := oci.ParseRef("tainted:v1", oci.RefOptions{Home: cli.Home()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	target, err := oci.Open(ctx, ref, oci.OpenOptions{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	desc, err := oci.Push(ctx, target, res.Worker, b, "v1", oci.PackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	msg := p.refused("conformance_failed", "attest", "--key", p.path("authority.key"), ref.WithDigest(desc.Digest).String())
	wantHas(t, "the refusal does not name the check, or echoes the value", msg, "no_customer_state")
	wantLacks(t, "the refusal does not name the check, or echoes the value", msg, "555")
	if _, err := target.Resolve(ctx, oci.AttestationTag(desc.Digest)); !errors.Is(err, errdef.ErrNotFound) {
		t.Fatalf("an attestation was written: %v", err)
	}
}

// TestQuickstartScript runs the README's main job, as written, with a
// freshly built oa and an empty $OA_HOME.
func TestQuickstartScript(t *testing.T) {
	t.Parallel() // a process of its own with its own OA_HOME
	bin := oaBinary(t)
	home := t.TempDir()
	script := func() *exec.Cmd {
		cmd := exec.Command("bash", filepath.Join("..", "..", "scripts", "quickstart"))
		cmd.Env = append(os.Environ(), "OA="+bin, "OA_HOME="+home, "COSIGN_PASSWORD=")
		return cmd
	}
	out, err := script().CombinedOutput()
	if err != nil {
		t.Fatalf("quickstart: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "deprecated") {
		t.Errorf("the README's main job uses a deprecated command:\n%s", out)
	}
	// The pipeline, then serve, one run over MCP stdio and the receipts.
	for _, want := range []string{"conformance_attestation  ✓", "admitted clinic-triage@1.2.0 as #1", "admission", "active", "connection sandbox verified: revision 1, ready", "bound deployment clinic as #1", "approved: the live plan is the bound one",
		`run_workflow append_triage_note AB-1234: "outcome":"done"`, "receipt chain ok: 1 receipt,", "OA_HOME=" + home} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("quickstart output lacks %q:\n%s", want, out)
		}
	}
	// A second run into the same host is refused and changes nothing.
	policy, _ := os.ReadFile(filepath.Join(home, "policy.cue"))
	again := script()
	b, _ := again.CombinedOutput()
	wantExit(t, "scripts/quickstart into a host", again.ProcessState.ExitCode(), 2, string(b), "")
	wantHas(t, "scripts/quickstart into a host", string(b), "host_exists")
	if len(policy) == 0 {
		t.Fatal("the host has no policy.cue before the refused run")
	}
	if after, _ := os.ReadFile(filepath.Join(home, "policy.cue")); string(after) != string(policy) {
		t.Fatal("the refused run changed the host's policy")
	}
}
