package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/projection"
)

// TestProjectAdmittedRelease: oa project writes the projection of an
// admitted release only, and refuses a tag, a release not admitted on this
// host, a revoked one and an output folder it may not replace, writing
// nothing each time.
func TestProjectAdmittedRelease(t *testing.T) {
	p := newPublisher(t)
	pinned := p.publish("clinic-triage")
	tagOnly, digest, _ := strings.Cut(pinned, "@")
	out := p.path("projection")
	p.ok("host", "init", "--publisher-key", p.path("publisher.pub"), "--authority-key", p.path("authority.pub"))

	nothingAt := func(dir string) {
		t.Helper()
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Fatalf("a refused projection wrote %s", dir)
		}
	}
	p.refused("admission_missing", "project", pinned, "--out", out)
	nothingAt(out)
	if _, _, code := runCLI(t, "project", pinned); code != 2 {
		t.Fatalf("project without --out: exit %d, want 2", code)
	}

	p.ok("admit", pinned, "--as", "Dr Ada")
	p.refused("reference_not_digest", "project", tagOnly, "--out", out)
	nothingAt(out)

	text := p.ok("project", pinned, "--out", out)
	for _, want := range []string{"projected clinic-triage@1.2.0", "skills/clinic-triage/SKILL.md", "materializationDigest", "read-only tools: records_read (records.read)", "effects: records.note.append"} {
		if !strings.Contains(text, want) {
			t.Fatalf("project output lacks %q:\n%s", want, text)
		}
	}
	m, err := projection.ReadManifest(out)
	if err != nil {
		t.Fatalf("projection.json: %v", err)
	}
	if m.ArtifactDigest != digest {
		t.Fatalf("projection.json: artifact digest = %q, want %q", m.ArtifactDigest, digest)
	}
	if m.Package != "clinic-triage" {
		t.Fatalf("projection.json: package = %q, want clinic-triage", m.Package)
	}
	for name, d := range m.Files {
		b, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(name)))
		if err != nil {
			t.Fatalf("%s on disk: %v", name, err)
		}
		if got := ir.DigestBytes(b); got != d {
			t.Fatalf("%s on disk has digest %v, want its manifest's %v", name, got, d)
		}
	}
	skill, _ := os.ReadFile(filepath.Join(out, "skills", "clinic-triage", "SKILL.md"))
	if !strings.HasPrefix(string(skill), "---\nname: clinic-triage\ndescription: ") {
		t.Fatalf("SKILL.md does not begin with its front matter (name clinic-triage, a description):\n%s", skill)
	}
	wantLacks(t, "SKILL.md names the publisher's folder", string(skill), p.dir)

	// --json, into the same folder again: the same projection, replaced.
	var j struct {
		Reference             string            `json:"reference"`
		ArtifactDigest        string            `json:"artifactDigest"`
		WorkerIRDigest        string            `json:"workerIrDigest"`
		PersonaDigest         string            `json:"personaDigest"`
		SkillDigest           string            `json:"skillDigest"`
		MaterializationDigest string            `json:"materializationDigest"`
		Files                 map[string]string `json:"files"`
		ReadOnlyTools         []projection.ToolDecl
		Effects               []projection.EffectDecl
	}
	if err := json.Unmarshal([]byte(p.ok("project", "--json", pinned, "--out", out)), &j); err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct{ name, got, want string }{
		{"reference", j.Reference, pinned},
		{"artifactDigest", j.ArtifactDigest, digest},
		{"workerIrDigest", j.WorkerIRDigest, m.WorkerIRDigest},
		{"personaDigest", j.PersonaDigest, m.PersonaDigest},
		{"skillDigest", j.SkillDigest, m.SkillDigest},
		{"materializationDigest", j.MaterializationDigest, m.MaterializationDigest},
	} {
		if f.got != f.want {
			t.Errorf("project --json: %s = %q, want %q (projection.json's)", f.name, f.got, f.want)
		}
	}
	if len(j.Files) != len(m.Files) {
		t.Errorf("project --json: %d files, want %d (projection.json's)", len(j.Files), len(m.Files))
	}
	if len(j.ReadOnlyTools) != 1 {
		t.Errorf("project --json: %d read-only tools, want 1", len(j.ReadOnlyTools))
	}
	if len(j.Effects) != 1 {
		t.Errorf("project --json: %d effects, want 1", len(j.Effects))
	}
	if t.Failed() {
		t.FailNow()
	}

	// A folder with other files in it is not replaced.
	mine := p.path("mine")
	if err := os.MkdirAll(mine, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mine, "notes.txt"), []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	msg := p.refused("projection_out_invalid", "project", pinned, "--out", mine)
	if strings.Contains(msg, mine) {
		t.Fatalf("the refusal names the local path:\n%s", msg)
	}
	if entries, _ := os.ReadDir(mine); len(entries) != 1 {
		t.Fatalf("a refused projection wrote into the folder: %v", entries)
	}

	// Revoked: no longer actively admitted, so no projection.
	p.ok("revoke", digest, "--reason", "test", "--as", "Dr Ada")
	again := p.path("again")
	p.refused("release_revoked", "project", pinned, "--out", again)
	nothingAt(again)
}
