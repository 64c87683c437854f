package projection

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"cuelang.org/go/cue/cuecontext"
	cueyaml "cuelang.org/go/encoding/yaml"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/examples"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/testkit/exampletest"
)

const fakeArtifact = "sha256:1111111111111111111111111111111111111111111111111111111111111111"

func project(t *testing.T, w *ir.Worker) *Projection {
	t.Helper()
	d, err := w.Digest()
	if err != nil {
		t.Fatal(err)
	}
	p, err := Project(w, fakeArtifact, d)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// refusedWith requires err to be a refusal that includes code.
func refusedWith(t *testing.T, err error, code blocking.Code) {
	t.Helper()
	for _, r := range blocking.Refusals(err) {
		if r.Code == code {
			return
		}
	}
	t.Fatalf("want a %s refusal, got %v", code, err)
}

// frontMatter splits SKILL.md into its YAML front matter and body.
func frontMatter(t *testing.T, skill []byte) (map[string]any, string) {
	t.Helper()
	rest, ok := bytes.CutPrefix(skill, []byte("---\n"))
	if !ok {
		t.Fatal("SKILL.md does not open with front matter")
	}
	fm, body, ok := bytes.Cut(rest, []byte("\n---\n"))
	if !ok {
		t.Fatal("SKILL.md front matter is not closed")
	}
	f, err := cueyaml.Extract("SKILL.md", fm)
	if err != nil {
		t.Fatalf("front matter is not YAML: %v", err)
	}
	var m map[string]any
	if err := cuecontext.New().BuildFile(f).Decode(&m); err != nil {
		t.Fatalf("front matter is not a YAML mapping: %v", err)
	}
	return m, string(body)
}

func TestSkillFrontMatter(t *testing.T) {
	for _, name := range examples.Names() {
		t.Run(name, func(t *testing.T) {
			res := exampletest.Compile(t, name)
			p := project(t, res.Worker)
			m, _ := frontMatter(t, p.Skill)
			if m["name"] != res.Worker.Name {
				t.Fatalf("name %v, want %s", m["name"], res.Worker.Name)
			}
			desc, _ := m["description"].(string)
			if desc == "" || utf8.RuneCountInString(desc) > MaxDescription || strings.ContainsAny(desc, "\r\n") {
				t.Fatalf("description %q is not one line of 1..1024 characters", desc)
			}
			if !strings.HasPrefix(oneLine(res.Worker.Responsibility), desc) {
				t.Fatalf("description %q is not from the responsibility", desc)
			}
			if got := SkillPath(res.Worker.Name); p.Files()[got] == nil || filepath.Base(filepath.Dir(got)) != m["name"] {
				t.Fatalf("SKILL.md is not at skills/<name>/SKILL.md: %s", got)
			}
			if len(m) != 2 {
				t.Fatalf("front matter has other keys: %v", slices.Sorted(maps.Keys(m)))
			}
		})
	}
}

func TestSkillContent(t *testing.T) {
	res := exampletest.Compile(t, "clinic-triage")
	p := project(t, res.Worker)
	_, body := frontMatter(t, p.Skill)
	var want []string
	for _, j := range res.Worker.Jobs {
		want = append(want, "`"+j.Name+"`", oneLine(j.Purpose), oneLine(j.DoneMeans))
		for in, prop := range j.InputSchema.Properties {
			want = append(want, "`"+in+"`", oneLine(prop.Description))
		}
	}
	for _, o := range contract.Outcomes {
		want = append(want, "`"+string(o.Outcome)+"`", o.Meaning, o.Next)
	}
	want = append(want, contract.CoordinatorTools...)
	want = append(want, contract.ArgRequestID, contract.ArgWaitSeconds, contract.ArgRunID, contract.ArgDecision, "references/triage.md", "`records_read` (capability `records.read`)", "safe_to_retry")
	for _, s := range want {
		if !strings.Contains(body, s) {
			t.Errorf("SKILL.md lacks %q", s)
		}
	}
	if t.Failed() {
		t.Log(string(p.Skill))
	}
	if !bytes.Equal(p.Files()["skills/clinic-triage/references/triage.md"], []byte(res.Worker.Skills[0].Text)) {
		t.Fatal("the package's skill doc is not projected under references/")
	}
	if !bytes.Contains(p.Persona, []byte(strings.TrimSpace(res.Worker.Persona.Text))) {
		t.Fatal("persona.md lacks the package's persona")
	}
}

// TestProjectedTextIsClean: nothing a model reads carries customer state,
// a host path, a digest or an example value.
func TestProjectedTextIsClean(t *testing.T) {
	for _, name := range examples.Names() {
		t.Run(name, func(t *testing.T) {
			res := exampletest.Compile(t, name)
			p := project(t, res.Worker)
			for file, b := range p.Files() {
				if !strings.HasSuffix(file, ".md") {
					continue
				}
				text := string(b)
				if f := ir.ScanText(text, true); len(f) > 0 {
					t.Errorf("%s: customer state: %+v", file, f)
				}
				for _, bad := range []string{os.TempDir(), "/home/", "/Users/", `:\`, "sha256:", "example", "e.g.", "default:"} {
					if strings.Contains(text, bad) {
						t.Errorf("%s contains %q", file, bad)
					}
				}
				if file == PersonaFile {
					continue
				}
				for _, j := range res.Worker.Jobs {
					for in, prop := range j.InputSchema.Properties {
						if prop.Pattern == "" {
							continue
						}
						// A value matching an input's pattern is an example value.
						re := regexp.MustCompile(strings.TrimSuffix(strings.TrimPrefix(prop.Pattern, "^"), "$"))
						if m := re.FindString(text); m != "" {
							t.Errorf("%s carries a value for input %s.%s", file, j.Name, in)
						}
					}
				}
			}
		})
	}
}

func TestAuthorityIsNarrowedNeverManufactured(t *testing.T) {
	res := exampletest.Compile(t, "clinic-triage")
	p := project(t, res.Worker)
	if len(p.ReadOnlyTools) != 1 || p.ReadOnlyTools[0].Name != "records_read" || p.ReadOnlyTools[0].CapabilityKey != "records.read" {
		t.Fatalf("read-only tools %+v", p.ReadOnlyTools)
	}
	if len(p.Effects) != 1 {
		t.Fatalf("effects %+v", p.Effects)
	}
	e := p.Effects[0]
	if e.CapabilityKey != "records.note.append" || e.Risk != ir.Consequential || !slices.Equal(e.Jobs, []string{"append_triage_note"}) || !slices.Equal(e.Steps, []string{"append_triage_note.append_note"}) {
		t.Fatalf("effect %+v", e)
	}
	var tools struct {
		Coordinator []string   `json:"coordinator"`
		ReadOnly    []ToolDecl `json:"readOnly"`
	}
	if err := json.Unmarshal(p.Files()[ToolsFile], &tools); err != nil || !slices.Equal(tools.Coordinator, contract.CoordinatorTools) || !slices.Equal(tools.ReadOnly, p.ReadOnlyTools) {
		t.Fatalf("tools.json: %v %s", err, p.Files()[ToolsFile])
	}
	if bytes.Contains(p.Files()[ToolsFile], []byte("records.note.append")) {
		t.Fatal("a consequential capability is offered as a tool")
	}
	// Every projected capability is declared, with its declared risk.
	for _, name := range examples.Names() {
		w := exampletest.Compile(t, name).Worker
		q := project(t, w)
		for _, tool := range q.ReadOnlyTools {
			if c, ok := w.Capability(tool.CapabilityKey); !ok || c.Risk != ir.ReadOnly || tool.Name != contract.ToolName(c.Key) {
				t.Errorf("%s: tool %s is not a declared read_only capability", name, tool.Name)
			}
		}
		for _, e := range q.Effects {
			if c, ok := w.Capability(e.CapabilityKey); !ok || c.Risk != e.Risk || c.Approval != e.Approval {
				t.Errorf("%s: effect %s is not as declared", name, e.CapabilityKey)
			}
		}
		if len(q.ReadOnlyTools)+len(q.Effects) != len(w.Capabilities) {
			t.Errorf("%s: %d capabilities projected as %d tools and %d effects", name, len(w.Capabilities), len(q.ReadOnlyTools), len(q.Effects))
		}
	}
	// A read-only capability that needs a person's approval is narrowed to
	// an effect declaration: calling it directly would skip the approval.
	w := res.Worker
	for i := range w.Capabilities {
		if w.Capabilities[i].Key == "records.read" {
			w.Capabilities[i].Approval = ir.ApprovalRequired
		}
	}
	q := project(t, w)
	if len(q.ReadOnlyTools) != 0 || len(q.Effects) != 2 {
		t.Fatalf("approval-required read: tools %+v effects %+v", q.ReadOnlyTools, q.Effects)
	}
	if !bytes.Contains(q.Skill, []byte("A person approves each use of `records.read`")) {
		t.Fatal("SKILL.md does not say the read needs approval")
	}
}

func TestDeterministic(t *testing.T) {
	a := exampletest.Compile(t, "clinic-triage")
	b := exampletest.Compile(t, "clinic-triage")
	p, q := project(t, a.Worker), project(t, b.Worker)
	if !maps.EqualFunc(p.Files(), q.Files(), bytes.Equal) || p.MaterializationDigest != q.MaterializationDigest {
		t.Fatal("the same release projected twice differs")
	}
	m := p.Manifest()
	if m.PersonaDigest != ir.DigestBytes(p.Persona) || m.SkillDigest != ir.DigestBytes(p.Skill) || m.Files[PersonaFile] != p.PersonaDigest {
		t.Fatal("a digest is not the sha256 of its file")
	}
	for name, b := range p.Files() {
		if name != ManifestFile && m.Files[name] != ir.DigestBytes(b) {
			t.Errorf("manifest digest of %s is wrong", name)
		}
	}
	if d, err := MaterializationDigest(m.Files, p.ArtifactDigest, p.WorkerIRDigest); err != nil || d != p.MaterializationDigest {
		t.Fatal("materializationDigest does not recompute from the manifest")
	}

	// The persona's text changes the persona and the materialization, not
	// the skill.
	w := b.Worker
	w.Persona.Text += "\nYou answer in short sentences."
	w.Persona.Digest = ir.DigestBytes([]byte(w.Persona.Text))
	r := project(t, w)
	if r.PersonaDigest == p.PersonaDigest || r.MaterializationDigest == p.MaterializationDigest || r.SkillDigest != p.SkillDigest {
		t.Fatal("the persona text does not move exactly the persona and materialization digests")
	}
	// The same IR in another artifact is another materialization.
	s, err := Project(a.Worker, "sha256:"+strings.Repeat("2", 64), a.Digest)
	if err != nil {
		t.Fatal(err)
	}
	if s.MaterializationDigest == p.MaterializationDigest || s.SkillDigest != p.SkillDigest || s.PersonaDigest != p.PersonaDigest {
		t.Fatal("the artifact digest does not move exactly the materialization digest")
	}
}

func TestProjectRefusals(t *testing.T) {
	res := exampletest.Compile(t, "clinic-triage")
	if _, err := Project(res.Worker, fakeArtifact, "sha256:"+strings.Repeat("0", 64)); err == nil {
		t.Fatal("an IR projected under another workerIrDigest")
	} else {
		refusedWith(t, err, blocking.ProjectionReleaseMismatch)
	}
	_, err := Project(res.Worker, "clinic-triage:1.2.0", res.Digest)
	refusedWith(t, err, blocking.ProjectionReleaseMismatch)

	fresh := func() *ir.Worker { return exampletest.Compile(t, "clinic-triage").Worker }
	projectErr := func(w *ir.Worker) error {
		d, err := w.Digest()
		if err != nil {
			t.Fatal(err)
		}
		_, err = Project(w, fakeArtifact, d)
		return err
	}

	// A capability served under a coordinator tool's name (get.run is
	// served as get_run).
	w := fresh()
	w.Capabilities = append(w.Capabilities, ir.Capability{Key: "get.run", Risk: ir.ReadOnly, Approval: ir.ApprovalNotRequired, Description: "Reads a run."})
	slices.SortFunc(w.Capabilities, func(a, b ir.Capability) int { return strings.Compare(a.Key, b.Key) })
	w.Ceiling.Capabilities = ir.SortStrings(append(w.Ceiling.Capabilities, "get.run"))
	refusedWith(t, projectErr(w), blocking.ToolNameClash)

	// Text a model would read that looks like customer state.
	w = fresh()
	w.Capabilities[1].Description = "Ask the desk at front.desk@clinic.example.org first."
	err = projectErr(w)
	refusedWith(t, err, blocking.ProjectionUnsafeText)
	if strings.Contains(err.Error(), "front.desk") {
		t.Fatalf("the refusal echoes the text: %v", err)
	}

	// A name that is not an Agent Skills name.
	w = fresh()
	w.Name = "Clinic--Triage"
	refusedWith(t, projectErr(w), blocking.ProjectionNameInvalid)

	// An IR that does not validate.
	w = fresh()
	w.Jobs[0].Steps[2].Capability = "records.delete"
	refusedWith(t, projectErr(w), blocking.ReferenceUnknown)
}

func TestLargeLimitsStayClean(t *testing.T) {
	w := exampletest.Compile(t, "clinic-triage").Worker
	big := int64(1000000)
	in := w.Jobs[0].InputSchema.Properties["summary"]
	in.MaxLength = &big
	w.Jobs[0].InputSchema.Properties["summary"] = in
	p := project(t, w)
	if !bytes.Contains(p.Skill, []byte("At most 1,000,000 characters")) {
		t.Fatalf("limit not rendered grouped:\n%s", p.Skill)
	}
	for _, c := range []struct {
		f    float64
		want string
	}{{7, "7"}, {2000, "2000"}, {12345, "12,345"}, {-98765.5, "-98,765.5"}, {0.25, "0.25"}} {
		if got := number(c.f); got != c.want {
			t.Errorf("number(%v) = %s, want %s", c.f, got, c.want)
		}
	}
}

func TestDescription(t *testing.T) {
	if got := Description("Does one thing.\n\tWell."); got != "Does one thing. Well." {
		t.Fatalf("got %q", got)
	}
	long := strings.Repeat("This worker does a careful thing. ", 60)
	d := Description(long)
	if utf8.RuneCountInString(d) > MaxDescription || !strings.HasSuffix(d, ".") {
		t.Fatalf("sentence cut: %d %q", utf8.RuneCountInString(d), d[len(d)-20:])
	}
	d = Description(strings.Repeat("wordy ", 400))
	if utf8.RuneCountInString(d) > MaxDescription || !strings.HasSuffix(d, "wordy…") {
		t.Fatalf("word cut: %d %q", utf8.RuneCountInString(d), d[len(d)-20:])
	}
	if q := yamlQuote(`a "b" \ c: #d`); q != `"a \"b\" \\ c: #d"` {
		t.Fatalf("yamlQuote: %s", q)
	}
}

func TestOutcomes(t *testing.T) {
	var terminal []contract.Outcome
	for _, o := range contract.Outcomes {
		if o.Terminal {
			terminal = append(terminal, o.Outcome)
		}
		if o.MayRetry != (o.Outcome == contract.OutcomeDidNotRun) {
			t.Errorf("%s: only did_not_run may be safe to retry", o.Outcome)
		}
		if o.Meaning == "" || o.SafeToRetry == "" || o.Next == "" {
			t.Errorf("%s: copy missing", o.Outcome)
		}
	}
	if !slices.Equal(terminal, []contract.Outcome{contract.OutcomeDone, contract.OutcomeNeedsReview, contract.OutcomeNotSureIfSaved, contract.OutcomeDidNotRun}) {
		t.Fatalf("terminal outcomes %v", terminal)
	}
	if contract.OutcomeRunning.Terminal() || !contract.OutcomeDone.Terminal() || contract.Outcome("maybe").Terminal() {
		t.Fatal("Terminal")
	}
}

// files lists dir's files as slash paths.
func files(t *testing.T, dir string) []string {
	t.Helper()
	out, err := regularFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestWrite(t *testing.T) {
	p := project(t, exampletest.Compile(t, "clinic-triage").Worker)
	parent := t.TempDir()
	dir := filepath.Join(parent, "deep", "proj")
	if err := p.Write(dir); err != nil {
		t.Fatal(err)
	}
	want := slices.Sorted(maps.Keys(p.Files()))
	if got := files(t, dir); !slices.Equal(got, want) {
		t.Fatalf("wrote %v, want %v", got, want)
	}
	for name, b := range p.Files() {
		if got, _ := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name))); !bytes.Equal(got, b) {
			t.Fatalf("%s differs on disk", name)
		}
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o755 {
		t.Fatalf("folder mode %v", fi.Mode())
	}
	if m, err := ReadManifest(dir); err != nil || m.MaterializationDigest != p.MaterializationDigest {
		t.Fatalf("ReadManifest: %v", err)
	}
	// An earlier projection of the same package is replaced whole.
	if err := os.Remove(filepath.Join(dir, PersonaFile)); err != nil {
		t.Fatal(err)
	}
	// (a missing file means the folder is no longer exactly a projection)
	err := p.Write(dir)
	refusedWith(t, err, blocking.ProjectionOutInvalid)
	if err := os.WriteFile(filepath.Join(dir, PersonaFile), p.Persona, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := p.Write(dir); err != nil {
		t.Fatalf("re-projecting into the same folder: %v", err)
	}
	if got := files(t, dir); !slices.Equal(got, want) {
		t.Fatalf("after re-projection: %v", got)
	}
	if entries, _ := os.ReadDir(filepath.Dir(dir)); len(entries) != 1 {
		t.Fatalf("temporary folders left behind: %v", entries)
	}

	// A folder with someone's file in it is refused and left as it was.
	mine := filepath.Join(parent, "mine")
	if err := os.MkdirAll(mine, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mine, "notes.txt"), []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = p.Write(mine)
	refusedWith(t, err, blocking.ProjectionOutInvalid)
	if strings.Contains(err.Error(), parent) {
		t.Fatalf("the refusal names a local path: %v", err)
	}
	if got := files(t, mine); !slices.Equal(got, []string{"notes.txt"}) {
		t.Fatalf("a refused write changed the folder: %v", got)
	}
	// A projection plus a stray file is not a projection.
	if err := os.WriteFile(filepath.Join(dir, "extra.md"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	refusedWith(t, p.Write(dir), blocking.ProjectionOutInvalid)
	os.Remove(filepath.Join(dir, "extra.md"))

	// Another package's projection is not replaced.
	inv := project(t, exampletest.Compile(t, "invoice-approval").Worker)
	refusedWith(t, inv.Write(dir), blocking.ProjectionOutInvalid)

	// A file, and a symbolic link, are not folders to project into.
	file := filepath.Join(parent, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	refusedWith(t, p.Write(file), blocking.ProjectionOutInvalid)
	link := filepath.Join(parent, "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	refusedWith(t, p.Write(link), blocking.ProjectionOutInvalid)

	// An existing empty folder is used.
	empty := filepath.Join(parent, "empty")
	if err := os.Mkdir(empty, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := p.Write(empty); err != nil {
		t.Fatal(err)
	}
	if got := files(t, empty); !slices.Equal(got, want) {
		t.Fatalf("empty folder: %v", got)
	}
	entries, _ := os.ReadDir(parent)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Fatalf("temporary folder left behind: %s", e.Name())
		}
	}
}

func TestWriteUnwritableParent(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes anywhere")
	}
	p := project(t, exampletest.Compile(t, "clinic-triage").Worker)
	parent := t.TempDir()
	if err := os.Chmod(parent, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(parent, 0o755) })
	refusedWith(t, p.Write(filepath.Join(parent, "out")), blocking.ProjectionOutInvalid)
}
