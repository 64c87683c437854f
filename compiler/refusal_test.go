package compiler

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/examples"
)

// bundleEdit changes a copy of the clinic-triage bundle in dir.
type bundleEdit func(t *testing.T, dir string)

// replace replaces the one occurrence of old in file by new.
func replaceOnce(file, old, new string) bundleEdit {
	return func(t *testing.T, dir string) {
		t.Helper()
		p := filepath.Join(dir, file)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(b), old); n != 1 {
			t.Fatalf("%s holds %q %d times, want once", file, old, n)
		}
		writeTestFile(t, p, strings.Replace(string(b), old, new, 1))
	}
}

// put writes file (creating its folder) with text.
func putFile(file, text string) bundleEdit {
	return func(t *testing.T, dir string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, file)), 0o755); err != nil {
			t.Fatal(err)
		}
		writeTestFile(t, filepath.Join(dir, file), text)
	}
}

// remove removes file or folder.
func removePath(file string) bundleEdit {
	return func(t *testing.T, dir string) {
		t.Helper()
		if err := os.RemoveAll(filepath.Join(dir, file)); err != nil {
			t.Fatal(err)
		}
	}
}

func writeTestFile(t *testing.T, p, text string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// editedExample copies clinic-triage into a fresh folder and applies edits.
func editedExample(t *testing.T, edits ...bundleEdit) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "bundle")
	if err := examples.Write("clinic-triage", dir); err != nil {
		t.Fatal(err)
	}
	for _, e := range edits {
		e(t, dir)
	}
	return dir
}

// want is one refusal a case must contain. With at set, the position must
// be FILE:LINE:COL of at's one occurrence in file (col checked unless
// anyCol); without at, pos must be exactly file (a folder or whole file,
// relative to the bundle) or, when file is "", is not checked.
type wantRefusal struct {
	code   blocking.Code
	path   string
	file   string
	at     string
	anyCol bool
}

// responsibilityBlock is the responsibility field of clinic-triage.
const responsibilityBlock = "responsibility: \"\"\"\n\tAppends a triage note to an open clinic record and confirms, by reading\n\tthe record back, that the note was saved. It never changes anything\n\telse on the record and never decides on treatment.\n\t\"\"\"\n"

// skill doc line appended by the customer-state cases.
const skillLine = "\nIf in doubt, the note may say: VALUE and nothing else.\n"

type refusalCase struct {
	name  string
	dir   func(t *testing.T) string // default: editedExample(t, edits...)
	edits []bundleEdit
	wants []wantRefusal
	// secret is the customer state the case plants; no refusal may echo it.
	secret string
	// unlocated skips the check that every refusal points into the bundle.
	unlocated bool
}

// customerState returns one case per place (prose field, persona, skill doc,
// evaluator expression) for value, each refused with code.
func customerState(name string, code blocking.Code, value string, places ...string) []refusalCase {
	var out []refusalCase
	for _, place := range places {
		c := refusalCase{name: name + "/" + place, secret: value}
		switch place {
		case "prose":
			c.edits = []bundleEdit{replaceOnce("capabilities.cue", `its status and notes."`, `its status and notes, `+value+`."`)}
			c.wants = []wantRefusal{{code: code, path: `capabilities."records.read".description`, file: "capabilities.cue", at: value}}
		case "persona":
			c.edits = []bundleEdit{replaceOnce("worker.cue", "asked you to record, word", "asked you to record, "+value+" word")}
			c.wants = []wantRefusal{{code: code, path: "persona", file: "worker.cue", at: value}}
		case "skill":
			c.edits = []bundleEdit{appendSkill(value)}
			c.wants = []wantRefusal{{code: code, path: "skills.triage.md", file: "skills/triage.md", at: value}}
		case "evaluator":
			c.edits = []bundleEdit{replaceOnce("jobs.cue", "record: input.record_ref\n\t\t\t\ttext:", `record: input.record_ref + " `+value+`"`+"\n\t\t\t\ttext:")}
			c.wants = []wantRefusal{{code: code, path: "evaluators.triage_note.expr", file: "jobs.cue", at: value}}
		default:
			panic(place)
		}
		out = append(out, c)
	}
	return out
}

func appendSkill(value string) bundleEdit {
	return func(t *testing.T, dir string) {
		t.Helper()
		p := filepath.Join(dir, "skills", "triage.md")
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		writeTestFile(t, p, string(b)+strings.Replace(skillLine, "VALUE", value, 1))
	}
}

func refusalCases() []refusalCase {
	const extra = "extra.cue"
	cases := []refusalCase{
		{name: "bundle_unreadable/missing_folder",
			dir:   func(t *testing.T) string { return filepath.Join(t.TempDir(), "nope") },
			wants: []wantRefusal{{code: blocking.BundleUnreadable, file: "."}}},
		{name: "bundle_unreadable/no_cue_files",
			edits: []bundleEdit{removePath("worker.cue"), removePath("jobs.cue"), removePath("capabilities.cue")},
			wants: []wantRefusal{{code: blocking.BundleUnreadable, file: "."}}},
		{name: "bundle_package_invalid/other_package",
			edits: []bundleEdit{putFile(extra, "package other\n\nnote: \"x\"\n")},
			wants: []wantRefusal{{code: blocking.BundlePackageInvalid, file: extra, at: "package other"}}},
		{name: "bundle_package_invalid/no_package_clause",
			edits: []bundleEdit{putFile(extra, "note: \"x\"\n")},
			wants: []wantRefusal{{code: blocking.BundlePackageInvalid, file: extra, at: "note", anyCol: true}}},
		{name: "bundle_syntax",
			edits: []bundleEdit{replaceOnce("worker.cue", `version:  "1.2.0"`, `version:  "1.2.0" )`)},
			wants: []wantRefusal{{code: blocking.BundleSyntax, file: "worker.cue", at: ")"}}},
		{name: "bundle_import_forbidden",
			edits: []bundleEdit{replaceOnce("worker.cue", "package worker\n", "package worker\n\nimport \"tool/exec\"\n")},
			wants: []wantRefusal{{code: blocking.BundleImportForbidden, file: "worker.cue", at: `"tool/exec"`}}},
		{name: "bundle_import_forbidden/not_standard",
			edits: []bundleEdit{replaceOnce("worker.cue", "package worker\n", "package worker\n\nimport \"example.com/tools\"\n")},
			wants: []wantRefusal{{code: blocking.BundleImportForbidden, file: "worker.cue", at: `"example.com/tools"`}}},
		{name: "bundle_schema_violation/unknown_field",
			edits: []bundleEdit{putFile(extra, "package worker\n\nfavourite_colour: \"blue\"\n")},
			wants: []wantRefusal{{code: blocking.BundleSchemaViolation, path: "favourite_colour", file: extra, at: "favourite_colour"}}},
		{name: "bundle_schema_violation/version",
			edits: []bundleEdit{replaceOnce("worker.cue", `"1.2.0"`, `"1.2"`)},
			wants: []wantRefusal{{code: blocking.BundleSchemaViolation, path: "version", file: "worker.cue", at: `"1.2"`}}},
		{name: "bundle_schema_violation/risk",
			edits: []bundleEdit{replaceOnce("capabilities.cue", `"read_only"`, `"dangerous"`)},
			wants: []wantRefusal{{code: blocking.BundleSchemaViolation, path: `capabilities."records.read".risk`, file: "capabilities.cue", at: `"dangerous"`}}},
		{name: "bundle_schema_violation/evaluator_import",
			edits: []bundleEdit{replaceOnce("jobs.cue", "imports: [\"strings\"]\n\t\texpr: \"\"\"\n\t\t\t{", "imports: [\"tool/exec\"]\n\t\texpr: \"\"\"\n\t\t\t{")},
			wants: []wantRefusal{{code: blocking.BundleSchemaViolation, path: "evaluators.triage_note.imports[0]", file: "jobs.cue", at: `"tool/exec"`}}},
		{name: "bundle_incomplete/type_not_value",
			edits: []bundleEdit{replaceOnce("worker.cue", responsibilityBlock, "responsibility: string\n")},
			wants: []wantRefusal{{code: blocking.BundleIncomplete, path: "responsibility", file: "worker.cue", at: "responsibility: string"}}},
		{name: "bundle_incomplete/removed",
			edits: []bundleEdit{replaceOnce("worker.cue", responsibilityBlock, "")},
			// No bundle text holds a missing field: position not checked.
			wants: []wantRefusal{{code: blocking.BundleIncomplete, path: "responsibility"}}, unlocated: true},
		{name: "bundle_invalid/conflict",
			edits: []bundleEdit{putFile(extra, "package worker\n\nname: \"clinic-notes\"\n")},
			wants: []wantRefusal{{code: blocking.BundleInvalid, path: "name", file: extra, at: `"clinic-notes"`}}},
		{name: "skill_docs_missing",
			edits: []bundleEdit{removePath("skills")},
			wants: []wantRefusal{{code: blocking.SkillDocsMissing, file: "skills"}}},
		{name: "skill_doc_invalid/empty",
			edits: []bundleEdit{putFile("skills/empty.md", "")},
			wants: []wantRefusal{{code: blocking.SkillDocInvalid, file: "skills/empty.md"}}},
		{name: "skill_doc_invalid/bad_name",
			edits: []bundleEdit{putFile("skills/Bad Name.md", "# A skill\n\nIt reads well.\n")},
			wants: []wantRefusal{{code: blocking.SkillDocInvalid, file: "skills/Bad Name.md"}}},
		{name: "customer_state_field_name/input",
			secret: "account_id",
			edits:  []bundleEdit{replaceOnce("jobs.cue", "\tinputs: {\n", "\tinputs: {\n\t\taccount_id: {type: \"string\", description: \"Unused.\"}\n")},
			wants:  []wantRefusal{{code: blocking.CustomerStateFieldName, path: "jobs.append_triage_note.inputs.account_id", file: "jobs.cue", at: "account_id"}}},
		{name: "customer_state_field_name/capability",
			secret: "records.password.read",
			edits:  []bundleEdit{putFile(extra, "package worker\n\ncapabilities: \"records.password.read\": {description: \"Read one password.\", risk: \"read_only\"}\n")},
			wants:  []wantRefusal{{code: blocking.CustomerStateFieldName, path: `capabilities."records.password.read"`, file: extra, at: `"records.password.read"`}}},
		{name: "evaluator_syntax",
			edits: []bundleEdit{replaceOnce("jobs.cue", `expr: "{record: input.record_ref}"`, `expr: "{record: "`)},
			wants: []wantRefusal{{code: blocking.EvaluatorSyntax, path: "evaluators.record_lookup.expr", file: "jobs.cue", at: `expr: "{record: "`}}},
		{name: "evaluator_invalid/undeclared_input",
			edits: []bundleEdit{replaceOnce("jobs.cue", `expr: "{record: input.record_ref}"`, `expr: "{record: input.nope}"`)},
			wants: []wantRefusal{{code: blocking.EvaluatorInvalid, path: "evaluators.record_lookup.expr", file: "jobs.cue", at: `expr: "{record: input.nope}"`}}},
		{name: "evaluator_invalid/predicate_yields_string",
			edits: []bundleEdit{replaceOnce("jobs.cue", `expr: "steps.load_record.status == \"open\""`, `expr: "input.summary"`)},
			wants: []wantRefusal{{code: blocking.EvaluatorInvalid, path: "evaluators.record_is_open.expr", file: "jobs.cue", at: `expr: "input.summary"`}}},
		{name: "evaluator_invalid/guard_uses_result",
			edits: []bundleEdit{replaceOnce("jobs.cue", `expr: "steps.load_record.status == \"open\""`, `expr: "result.status == \"open\""`)},
			wants: []wantRefusal{{code: blocking.EvaluatorInvalid, path: "evaluators.record_is_open.expr", file: "jobs.cue", at: `expr: "result.status`}}},
		{name: "evaluator_invalid/text_answer_has_no_such_field",
			edits: []bundleEdit{replaceOnce("jobs.cue", `args: "record_lookup"},`, `args: "record_lookup", answer: "text"},`)},
			wants: []wantRefusal{{code: blocking.EvaluatorInvalid, path: "evaluators.record_is_open.expr", file: "jobs.cue", at: `expr: "steps.load_record.status`}}},
		{name: "bundle_schema_violation/answer_on_effect",
			edits: []bundleEdit{replaceOnce("jobs.cue", `args: "triage_note"}`, `args: "triage_note", answer: "text"}`)},
			wants: []wantRefusal{{code: blocking.BundleSchemaViolation, path: "jobs.append_triage_note.steps[2].answer", file: "jobs.cue", at: `answer: "text"`, anyCol: true}}},
		{name: "evaluator_kind_mismatch",
			edits: []bundleEdit{replaceOnce("jobs.cue", `capability: "records.read", args: "record_lookup"},`+"\n\t\t{id: \"record_open\"", `capability: "records.read", args: "record_is_open"},`+"\n\t\t{id: \"record_open\"")},
			wants: []wantRefusal{{code: blocking.EvaluatorKindMismatch, path: "jobs.append_triage_note.steps[0].args", file: "jobs.cue", at: `args: "record_is_open"`}}},
		{name: "evaluator_unused",
			edits: []bundleEdit{putFile(extra, "package worker\n\nevaluators: spare: {kind: \"predicate\", expr: \"true\"}\n")},
			wants: []wantRefusal{{code: blocking.EvaluatorUnused, path: "evaluators.spare", file: extra, at: "spare"}}},
		{name: "reference_unknown/capability",
			edits: []bundleEdit{replaceOnce("jobs.cue", `capability: "records.note.append"`, `capability: "records.note.delete"`)},
			wants: []wantRefusal{{code: blocking.ReferenceUnknown, path: "jobs.append_triage_note.steps[2].capability", file: "jobs.cue", at: `capability: "records.note.delete"`}}},
		{name: "reference_unknown/evidence",
			edits: []bundleEdit{replaceOnce("jobs.cue", `evidence: ["note_saved"]`, `evidence: ["note_saved", "note_checked"]`)},
			wants: []wantRefusal{{code: blocking.ReferenceUnknown, path: "jobs.append_triage_note.evidence", file: "jobs.cue", at: `evidence: ["note_saved", "note_checked"]`}}},
		{name: "step_risk_mismatch",
			edits: []bundleEdit{replaceOnce("jobs.cue", `kind: "check", capability: "records.read"`, `kind: "check", capability: "records.note.append"`)},
			wants: []wantRefusal{{code: blocking.StepRiskMismatch, path: "jobs.append_triage_note.steps[3].capability", file: "jobs.cue", at: `capability: "records.note.append", args: "record_lookup"`}}},
		{name: "step_skip_consequential/effect",
			edits: []bundleEdit{replaceOnce("jobs.cue", `args: "triage_note"}`, `args: "triage_note", skippable_while: "record_open"}`)},
			wants: []wantRefusal{{code: blocking.StepSkipConsequential, path: "jobs.append_triage_note.steps[2].skippable_while", file: "jobs.cue", at: `skippable_while: "record_open"`, anyCol: true}}},
		{name: "step_skip_consequential/guard",
			edits: []bundleEdit{replaceOnce("jobs.cue", `predicate: "record_is_open"}`, `predicate: "record_is_open", skippable_while: "record_open"}`)},
			wants: []wantRefusal{{code: blocking.StepSkipConsequential, path: "jobs.append_triage_note.steps[1].skippable_while", file: "jobs.cue", at: `skippable_while: "record_open"`, anyCol: true}}},
		{name: "step_skip_guard_unknown/later_guard",
			edits: []bundleEdit{replaceOnce("jobs.cue", `args: "record_lookup"},`, `args: "record_lookup", skippable_while: "record_open"},`)},
			wants: []wantRefusal{{code: blocking.StepSkipGuardUnknown, path: "jobs.append_triage_note.steps[0].skippable_while", file: "jobs.cue", at: `skippable_while: "record_open"`, anyCol: true}}},
		{name: "step_skip_guard_unknown/not_a_guard",
			edits: []bundleEdit{replaceOnce("jobs.cue", `evidence: "note_saved"}`, `evidence: "note_saved", skippable_while: "load_record"}`)},
			wants: []wantRefusal{{code: blocking.StepSkipGuardUnknown, path: "jobs.append_triage_note.steps[3].skippable_while", file: "jobs.cue", at: `skippable_while: "load_record"`, anyCol: true}}},
		{name: "duplicate_name/step_id",
			edits: []bundleEdit{replaceOnce("jobs.cue", `id: "confirm_note"`, `id: "append_note"`)},
			wants: []wantRefusal{{code: blocking.DuplicateName, path: "jobs.append_triage_note.steps[3].id", file: "jobs.cue", at: `id: "append_note", kind: "check"`}}},
		{name: "capability_outside_ceiling/key",
			edits: []bundleEdit{putFile(extra, "package worker\n\ncapabilities: \"audit.log.read\": {description: \"Read the audit log.\", risk: \"read_only\"}\n")},
			wants: []wantRefusal{{code: blocking.CapabilityOutsideCeiling, path: `capabilities."audit.log.read"`, file: extra, at: `"audit.log.read"`}}},
		{name: "tool_name_too_long",
			edits: []bundleEdit{putFile(extra, "package worker\n\ncapabilities: \"records.very_long_capability_name_that_no_mcp_client_accepts_at_all\": {description: \"Read a summary.\", risk: \"read_only\"}\n")},
			wants: []wantRefusal{{code: blocking.ToolNameTooLong, path: `capabilities."records.very_long_capability_name_that_no_mcp_client_accepts_at_all"`, file: extra, at: `"records.very_long_capability_name_that_no_mcp_client_accepts_at_all"`}}},
		{name: "tool_name_clash",
			edits: []bundleEdit{putFile(extra, "package worker\n\ncapabilities: {\n\t\"records.a.b_c\": {description: \"Read one thing.\", risk: \"read_only\"}\n\t\"records.a_b.c\": {description: \"Read another thing.\", risk: \"read_only\"}\n}\n")},
			wants: []wantRefusal{{code: blocking.ToolNameClash, path: `capabilities."records.a_b.c"`, file: extra, at: `"records.a_b.c"`}}},
		{name: "capability_outside_ceiling/max_risk",
			edits: []bundleEdit{replaceOnce("worker.cue", `max_risk:     "consequential"`, `max_risk:     "read_only"`)},
			wants: []wantRefusal{{code: blocking.CapabilityOutsideCeiling, path: `capabilities."records.note.append".risk`, file: "capabilities.cue", at: `risk:        "consequential"`}}},
	}
	all := []string{"prose", "persona", "skill", "evaluator"}
	for _, cs := range []struct {
		name  string
		code  blocking.Code
		value string
	}{
		{"customer_state_token/github", blocking.CustomerStateToken, "ghp_aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xY2zA4"},
		{"customer_state_token/aws", blocking.CustomerStateToken, "AKIAIOSFODNN7EXAMPLE"},
		{"customer_state_token/stripe", blocking.CustomerStateToken, "sk_live_4eC39HqLyjWDarjtT1zdp7dc"},
		{"customer_state_token/assigned_to_name", blocking.CustomerStateToken, "SECRET_TOKEN=hunter2"},
		{"customer_state_private_key", blocking.CustomerStatePrivateKey, "-----BEGIN RSA PRIVATE KEY-----"},
		{"customer_state_jwt", blocking.CustomerStateJWT, "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ0cmlhZ2UifQ.c2lnbmF0dXJlLWhlcmUtb2s"},
		{"customer_state_high_entropy", blocking.CustomerStateHighEntropy, "Q7fZp2LkX9vR4tBw8NcY3hJm6DsG1aWe5UqK0oPx"},
		{"customer_state_email", blocking.CustomerStateEmail, "jane.doe@example.org"},
		{"customer_state_phone/us", blocking.CustomerStatePhone, "+1 415 555 0134"},
		{"customer_state_phone/uk", blocking.CustomerStatePhone, "(020) 7946 0958"},
		{"customer_state_credential_url/userinfo", blocking.CustomerStateCredURL, "https://clinic:s3cr3tpw@db.host.test/"},
		{"customer_state_credential_url/query", blocking.CustomerStateCredURL, "https://host/x?token=abc"},
	} {
		cases = append(cases, customerState(cs.name, cs.code, cs.value, all...)...)
	}
	// Digit runs are refused in prose only.
	cases = append(cases, customerState("customer_state_digit_run", blocking.CustomerStateDigitRun, "48213", "prose", "persona", "skill")...)
	return cases
}

func TestRefusals(t *testing.T) {
	for _, tc := range refusalCases() {
		t.Run(tc.name, func(t *testing.T) {
			var dir string
			if tc.dir != nil {
				dir = tc.dir(t)
			} else {
				dir = editedExample(t, tc.edits...)
			}
			before := snapshotDir(t, dir)
			res, err := Compile(dir)
			if res != nil {
				t.Errorf("Compile returned a result for a refused bundle")
			}
			if got := blocking.ExitStatus(err); got != 2 {
				t.Fatalf("ExitStatus = %d, want 2; err = %v", got, err)
			}
			if after := snapshotDir(t, dir); after != before {
				t.Errorf("Compile changed the bundle folder:\nbefore %s\nafter  %s", before, after)
			}
			refused := blocking.Refusals(err)
			codes := map[blocking.Code]bool{}
			for _, w := range tc.wants {
				codes[w.code] = true
				checkWant(t, dir, refused, w)
			}
			for _, e := range refused {
				if !codes[e.Code] {
					t.Errorf("unexpected refusal %s (pos %q path %q detail %q)", e.Code, e.Pos, e.Path, e.Detail)
				}
				if !tc.unlocated && e.Pos != dir && !strings.HasPrefix(e.Pos, dir+string(filepath.Separator)) {
					t.Errorf("refusal %s (path %q detail %q) is located at %q, outside the bundle", e.Code, e.Path, e.Detail, e.Pos)
				}
				if entry, ok := blocking.Lookup(e.Code); !ok || entry.Stage != blocking.StageCompile {
					t.Errorf("code %s is not a compile-stage code", e.Code)
				}
			}
			if os.Getenv("REFUSAL_DUMP") != "" {
				for _, e := range refused {
					t.Logf("%s | %s | %s | %s", e.Code, relPos(dir, e.Pos, false), e.Path, e.Detail)
				}
			}
			if tc.secret != "" {
				checkNoEcho(t, dir, err, tc.secret, tc.name)
			}
		})
	}
}

// checkWant asserts that refused holds a refusal matching w.
func checkWant(t *testing.T, dir string, refused blocking.List, w wantRefusal) {
	t.Helper()
	var wantPos string
	switch {
	case w.at != "":
		line, col := locateText(t, filepath.Join(dir, w.file), w.at)
		wantPos = w.file + ":" + strconv.Itoa(line) + ":" + strconv.Itoa(col)
	case w.file != "":
		wantPos = w.file
	}
	var sameCode []string
	for _, e := range refused {
		if e.Code != w.code {
			continue
		}
		gotPos := relPos(dir, e.Pos, w.anyCol)
		want := wantPos
		if w.anyCol {
			want = relPos(dir, filepath.Join(dir, wantPos), true)
		}
		if e.Path == w.path && (w.file == "" || gotPos == want) {
			return
		}
		sameCode = append(sameCode, "pos "+strconv.Quote(e.Pos)+" path "+strconv.Quote(e.Path))
	}
	t.Errorf("no %s refusal at pos %q path %q; %s refusals: %v\nall: %v", w.code, wantPos, w.path, w.code, sameCode, refused)
}

// relPos renders pos relative to the bundle folder, without its column
// when dropCol is set.
func relPos(dir, pos string, dropCol bool) string {
	file, line, col := splitPos(pos)
	if rel, err := filepath.Rel(dir, file); err == nil && !strings.HasPrefix(rel, "..") {
		file = filepath.ToSlash(rel)
	}
	switch {
	case line == "":
		return file
	case dropCol:
		return file + ":" + line
	}
	return file + ":" + line + ":" + col
}

// splitPos splits FILE:LINE:COL; a pos without a line is all file.
func splitPos(pos string) (file, line, col string) {
	i := strings.LastIndexByte(pos, ':')
	j := strings.LastIndexByte(pos[:max(i, 0)], ':')
	if i < 0 || j < 0 || !isDecimal(pos[j+1:i]) || !isDecimal(pos[i+1:]) {
		return pos, "", ""
	}
	return pos[:j], pos[j+1 : i], pos[i+1:]
}

func isDecimal(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}

// locate returns the 1-based line and rune column of the one occurrence of
// needle in file.
func locateText(t *testing.T, file, needle string) (int, int) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if n := strings.Count(text, needle); n != 1 {
		t.Fatalf("%s holds %q %d times, want once", file, needle, n)
	}
	before := text[:strings.Index(text, needle)]
	line := 1 + strings.Count(before, "\n")
	return line, 1 + utf8.RuneCountInString(before[strings.LastIndexByte(before, '\n')+1:])
}

// checkNoEcho asserts that no refusal text holds secret or any 8-byte part
// of it. The bundle folder (chosen by the test, not derived from the value)
// is blanked first. A field name is its own location, so for the
// field-name rule only the detail is checked.
func checkNoEcho(t *testing.T, dir string, err error, secret, name string) {
	t.Helper()
	texts := []string{}
	fieldName := strings.HasPrefix(name, "customer_state_field_name")
	if !fieldName {
		texts = append(texts, err.Error())
	}
	for _, e := range blocking.Refusals(err) {
		texts = append(texts, string(e.Code), e.Detail)
		if !fieldName {
			texts = append(texts, e.Pos, e.Path)
		}
	}
	parts := []string{secret}
	for i := 0; i+8 <= len(secret); i++ {
		parts = append(parts, secret[i:i+8])
	}
	for _, text := range texts {
		text = strings.ReplaceAll(text, dir, "BUNDLE")
		for _, p := range parts {
			if strings.Contains(text, p) {
				t.Errorf("refusal echoes %q of the planted value: %q", p, text)
				return
			}
		}
	}
}

// snapshot lists every file under dir with its size and content.
func snapshotDir(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) && p == dir {
				return nil
			}
			return err
		}
		b.WriteString(p)
		if !d.IsDir() {
			c, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b.WriteString("=" + string(c))
		}
		b.WriteString("\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestRefusalNegativeControls(t *testing.T) {
	for _, name := range examples.Names() {
		t.Run("unmodified_"+name, func(t *testing.T) {
			dir := t.TempDir()
			if err := examples.Write(name, dir); err != nil {
				t.Fatal(err)
			}
			res, err := Compile(dir)
			if err != nil || res == nil || len(res.IR) == 0 {
				t.Fatalf("Compile(%s) = %v, %v; want IR", name, res, err)
			}
			if blocking.ExitStatus(err) != 0 {
				t.Fatalf("ExitStatus = %d, want 0", blocking.ExitStatus(err))
			}
		})
	}
	// Digit runs are ordinary numbers in an expression and in a pattern.
	t.Run("digit_run_in_expression_and_pattern", func(t *testing.T) {
		dir := editedExample(t,
			replaceOnce("jobs.cue", `expr: "{record: input.record_ref}"`, `expr: "{record: input.record_ref, limit: 48213}"`),
			replaceOnce("jobs.cue", `pattern:     "^[A-Z]{2}-[0-9]{4}$"`, `pattern:     "^([A-Z]{2}-[0-9]{4}|48213)$"`))
		if res, err := Compile(dir); err != nil || res == nil {
			t.Fatalf("Compile = %v, %v; want IR", res, err)
		}
	})
	t.Run("several_problems_one_pass", func(t *testing.T) {
		dir := editedExample(t,
			replaceOnce("capabilities.cue", `its status and notes."`, `its status and notes, jane.doe@example.org."`),
			replaceOnce("worker.cue", "asked you to record, word", "asked you to record, +1 415 555 0134 word"),
			appendSkill("AKIAIOSFODNN7EXAMPLE"))
		res, err := Compile(dir)
		if res != nil || blocking.ExitStatus(err) != 2 {
			t.Fatalf("Compile = %v, %v; want a refusal", res, err)
		}
		got := map[blocking.Code]int{}
		for _, e := range blocking.Refusals(err) {
			got[e.Code]++
		}
		for _, c := range []blocking.Code{blocking.CustomerStateEmail, blocking.CustomerStatePhone, blocking.CustomerStateToken} {
			if got[c] != 1 {
				t.Errorf("%d %s refusals, want 1; all: %v", got[c], c, err)
			}
		}
		if n := len(blocking.Refusals(err)); n != 3 {
			t.Errorf("%d refusals, want 3: %v", n, err)
		}
	})
}
