package ir

import (
	"bytes"
	"errors"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/contract"
)

func golden(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/clinic-triage.ir.json")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func refusalCode(t *testing.T, err error) blocking.Code {
	t.Helper()
	var e *blocking.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v is not a refusal", err)
	}
	return e.Code
}

func TestDecodeCanonicalRoundTrip(t *testing.T) {
	b := golden(t)
	w, err := DecodeCanonical(b)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Encode(w)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, b) {
		t.Fatal("Encode(DecodeCanonical(b)) != b")
	}
	d, err := w.Digest()
	if err != nil || d != DigestBytes(b) {
		t.Fatalf("Digest = %s, %v; want %s", d, err, DigestBytes(b))
	}
	if !strings.HasPrefix(d, "sha256:") || len(d) != 71 {
		t.Fatalf("digest %q is not sha256:<64 hex>", d)
	}
}

func TestDecodeIsStrict(t *testing.T) {
	b := golden(t)
	cases := map[string][]byte{
		"unknown field":  bytes.Replace(b, []byte(`{"capabilities"`), []byte(`{"connectionId":"x","capabilities"`), 1),
		"duplicate key":  bytes.Replace(b, []byte(`{"capabilities"`), []byte(`{"name":"a","capabilities"`), 1),
		"trailing data":  append(append([]byte{}, b...), []byte(` {}`)...),
		"not an object":  []byte(`[1,2]`),
		"wrong type":     bytes.Replace(b, []byte(`"protocol":"oa.worker/v1"`), []byte(`"protocol":7`), 1),
		"invalid syntax": b[:len(b)-1],
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Decode(in)
			if err == nil {
				t.Fatal("Decode accepted it")
			}
			if got := refusalCode(t, err); got != blocking.IRMalformed {
				t.Fatalf("code %s, want %s", got, blocking.IRMalformed)
			}
		})
	}
}

func TestDecodeCanonicalRefusesNonCanonicalBytes(t *testing.T) {
	b := golden(t)
	spaced := bytes.Replace(b, []byte(`,"ceiling"`), []byte(`, "ceiling"`), 1)
	if _, err := Decode(spaced); err != nil {
		t.Fatalf("Decode refused valid non-canonical JSON: %v", err)
	}
	if _, err := DecodeCanonical(spaced); err == nil {
		t.Fatal("DecodeCanonical accepted non-canonical bytes")
	}
}

func TestValidateFindsBrokenInvariants(t *testing.T) {
	cases := []struct {
		name string
		edit func(w *Worker)
		code blocking.Code
		path string
	}{
		{"protocol", func(w *Worker) { w.Protocol = "oa.worker/v9" }, blocking.ProtocolUnsupported, "protocol"},
		{"unsorted capabilities", func(w *Worker) {
			w.Capabilities[0], w.Capabilities[1] = w.Capabilities[1], w.Capabilities[0]
		}, blocking.IRNotNormalized, "capabilities[1]"},
		{"duplicate capability", func(w *Worker) { w.Capabilities[1] = w.Capabilities[0] }, blocking.DuplicateName, "capabilities[1]"},
		{"undeclared capability", func(w *Worker) { w.Jobs[0].Steps[0].Capability = "records.nope" }, blocking.ReferenceUnknown, "jobs.append_triage_note.steps[0].capability"},
		{"check through consequential", func(w *Worker) { w.Jobs[0].Steps[3].Capability = "records.note.append" }, blocking.StepRiskMismatch, "jobs.append_triage_note.steps[3].capability"},
		{"evaluator kind", func(w *Worker) { w.Jobs[0].Steps[0].Arguments = "note_on_record" }, blocking.EvaluatorKindMismatch, "jobs.append_triage_note.steps[0].arguments"},
		{"guard with capability", func(w *Worker) { w.Jobs[0].Steps[1].Capability = "records.read" }, blocking.ReferenceUnknown, "jobs.append_triage_note.steps[1].capability"},
		{"answer on a guard", func(w *Worker) { w.Jobs[0].Steps[1].Answer = AnswerText }, blocking.ReferenceUnknown, "jobs.append_triage_note.steps[1].answer"},
		{"answer not text", func(w *Worker) { w.Jobs[0].Steps[0].Answer = "image" }, blocking.ReferenceUnknown, "jobs.append_triage_note.steps[0].answer"},
		{"evidence not produced", func(w *Worker) { w.Jobs[0].RequiredEvidence = []string{"elsewhere"} }, blocking.ReferenceUnknown, "jobs.append_triage_note.evidence[0]"},
		{"duplicate step id", func(w *Worker) { w.Jobs[0].Steps[1].ID = w.Jobs[0].Steps[0].ID }, blocking.DuplicateName, "jobs.append_triage_note.steps[1].id"},
		{"source edited", func(w *Worker) { w.Evaluators[0].Source += " " }, blocking.IRDigestMismatch, "evaluators." + "note_on_record" + ".digest"},
		{"skill edited", func(w *Worker) { w.Skills[0].Text += "!" }, blocking.IRDigestMismatch, `skills."triage.md".digest`},
		{"outside ceiling", func(w *Worker) { w.Ceiling.Capabilities = []string{"records.read"} }, blocking.CapabilityOutsideCeiling, `capabilities."records.note.append"`},
		{"risk above ceiling", func(w *Worker) { w.Ceiling.MaxRisk = ReadOnly }, blocking.CapabilityOutsideCeiling, `capabilities."records.note.append".risk`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, err := DecodeCanonical(golden(t))
			if err != nil {
				t.Fatal(err)
			}
			if p := Validate(w); len(p) != 0 {
				t.Fatalf("golden has problems: %v", p)
			}
			c.edit(w)
			for _, p := range Validate(w) {
				if p.Code == c.code && p.PathString() == c.path {
					return
				}
			}
			t.Fatalf("Validate = %+v, want %s at %s", Validate(w), c.code, c.path)
		})
	}
}

func TestCeilingAllows(t *testing.T) {
	cases := []struct {
		patterns []string
		key      string
		want     bool
	}{
		{[]string{"records.*"}, "records.note.append", true},
		{[]string{"records.*"}, "records", false},
		{[]string{"records.*"}, "recordsx.read", false},
		{[]string{"records.read"}, "records.read", true},
		{[]string{"records.read"}, "records.read.all", false},
		{nil, "records.read", false},
	}
	for _, c := range cases {
		if got := CeilingAllows(c.patterns, c.key); got != c.want {
			t.Errorf("CeilingAllows(%v, %q) = %v, want %v", c.patterns, c.key, got, c.want)
		}
	}
}

func TestScanTextFindsEachShapeWithoutEchoingIt(t *testing.T) {
	cases := []struct {
		text  string
		prose bool
		code  blocking.Code
	}{
		{"key ghp_" + strings.Repeat("aB3", 12), false, blocking.CustomerStateToken},
		{"AKIAIOSFODNN7EXAMPLE", false, blocking.CustomerStateToken},
		{"-----BEGIN EC PRIVATE KEY-----", false, blocking.CustomerStatePrivateKey},
		{"-----BEGIN PGP PRIVATE KEY BLOCK-----", false, blocking.CustomerStatePrivateKey},
		{"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", false, blocking.CustomerStateJWT},
		{"q7Zr2VxK9mLp4TnB8cWd3YhF6jGs1AeU5oRiE0", false, blocking.CustomerStateHighEntropy},
		{"write to nurse.lead@clinic.example", true, blocking.CustomerStateEmail},
		{"call +44 20 7946 0958 now", true, blocking.CustomerStatePhone},
		{"case 123456 is open", true, blocking.CustomerStateDigitRun},
		{"https://admin:hunter2@records.example/", false, blocking.CustomerStateCredURL},
		{"https://records.example/api?token=abc", false, blocking.CustomerStateCredURL},
		{"run env SECRET_TOKEN=hunter2 server", false, blocking.CustomerStateToken},
		{"then DB_PASSWORD='pw' is set", true, blocking.CustomerStateToken},
		{"with api-key=x1", false, blocking.CustomerStateToken},
	}
	for _, c := range cases {
		got := ScanText(c.text, c.prose)
		if len(got) != 1 || got[0].Code != c.code {
			t.Errorf("ScanText(%q) = %+v, want one %s", c.text, got, c.code)
			continue
		}
		if strings.Contains(got[0].Rule, c.text) {
			t.Errorf("finding echoes the text: %+v", got[0])
		}
	}
}

func TestScanTextLeavesOrdinaryTextAlone(t *testing.T) {
	for _, s := range []string{
		"Append a triage note to an open clinic record.",
		"^[A-Z]{2}-[0-9]{4}$",
		"sha256:30f1f80bf2668e006ee8e45d8424c3f2fd1e431d319ddf9ea4ddfafb3e461f68",
		"steps.load_invoice.amount_cents <= 2500000",
		"internationalization and responsibilities",
		"set SECRET_TOKEN=$SECRET_TOKEN or TOKEN=<your token> on the host",
		"token == input.token and TOKEN_FILE=/run/x",
	} {
		if got := ScanText(s, false); len(got) != 0 {
			t.Errorf("ScanText(%q) = %+v, want none", s, got)
		}
	}
	if got := ScanText("limit 2500000", false); len(got) != 0 {
		t.Errorf("digit run refused outside prose: %+v", got)
	}
}

func TestScanNameRefusesHostOwnedNames(t *testing.T) {
	for _, bad := range []string{"account_id", "connection", "db_password", "api_key", "secret", "auth_token", "accountid", "connectionid", "dbpassword", "clientsecret"} {
		if _, hit := ScanName(bad); !hit {
			t.Errorf("ScanName(%q) passed", bad)
		}
	}
	for _, ok := range []string{"record_ref", "summary", "accounting_period_note", "tokenize", "records.read"} {
		if f, hit := ScanName(ok); hit {
			t.Errorf("ScanName(%q) = %+v, want pass", ok, f)
		}
	}
}

func TestScanWorkerOnGoldenIsClean(t *testing.T) {
	w, err := DecodeCanonical(golden(t))
	if err != nil {
		t.Fatal(err)
	}
	if p := ScanWorker(w); len(p) != 0 {
		t.Fatalf("ScanWorker(golden) = %+v", p)
	}
	w.Jobs[0].Purpose += " Ask ops@example.org."
	p := ScanWorker(w)
	if len(p) != 1 || p[0].Code != blocking.CustomerStateEmail || p[0].PathString() != "jobs.append_triage_note.purpose" {
		t.Fatalf("ScanWorker = %+v", p)
	}
}

// FuzzDecode checks the IR decoder never panics and that whatever it
// accepts re-encodes canonically and decodes to an equal value.
func FuzzDecode(f *testing.F) {
	f.Add(golden(f))
	f.Add([]byte(`{"protocol":"oa.worker/v1","name":"x"}`))
	f.Add([]byte(`{"jobs":[{"name":"a","inputSchema":{"properties":{"b":{"type":"string","maxLength":3}}}}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		w, err := Decode(b)
		if err != nil {
			return
		}
		enc, err := Encode(w)
		if err != nil {
			t.Fatalf("Encode of decoded IR: %v", err)
		}
		w2, err := DecodeCanonical(enc)
		if err != nil {
			t.Fatalf("DecodeCanonical(Encode(w)): %v", err)
		}
		// Equal as values: the canonical form is a fixed point, and what it
		// decodes to encodes to it again.
		enc2, err := Encode(w2)
		if err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("decode/encode is not stable: %v", err)
		}
		w3, err := DecodeCanonical(enc2)
		if err != nil || !reflect.DeepEqual(w2, w3) {
			t.Fatalf("decoding the canonical form twice gave different values: %v", err)
		}
	})
}

// TestDecodeRefusalsNeverEchoTheInput: the decoder's messages quote keys;
// a key can be a secret.
func TestDecodeRefusalsNeverEchoTheInput(t *testing.T) {
	secret := "ghp_" + strings.Repeat("Qz7", 12)
	b := golden(t)
	for name, in := range map[string][]byte{
		"duplicate key": bytes.Replace(b, []byte(`{"capabilities"`), []byte(`{"`+secret+`":1,"`+secret+`":2,"capabilities"`), 1),
		"unknown field": bytes.Replace(b, []byte(`{"capabilities"`), []byte(`{"`+secret+`":1,"capabilities"`), 1),
	} {
		_, err := Decode(in)
		if err == nil || strings.Contains(err.Error(), secret[:10]) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestCheckToolNames: a served capability's MCP tool name is its key with
// '_' for '.', matches the strict clients' rule, and is refused (located
// at the capability) when too long or taken by a coordinator tool or by
// another served capability.
func TestCheckToolNames(t *testing.T) {
	if got := contract.ToolName("records.note.append"); got != "records_note_append" || !regexp.MustCompile(contract.ToolNamePattern).MatchString(got) {
		t.Fatalf("contract.ToolName = %q", got)
	}
	long := "records." + strings.Repeat("x", 57)
	for _, tc := range []struct {
		keys []string
		want []Problem
	}{
		{[]string{"records.read", "records.note.read"}, nil},
		{[]string{"records." + strings.Repeat("x", 56)}, nil},
		{[]string{long}, []Problem{{Code: blocking.ToolNameTooLong, Path: []string{"capabilities", long}}}},
		{[]string{"list.workflows"}, []Problem{{Code: blocking.ToolNameClash, Path: []string{"capabilities", "list.workflows"}}}},
		{[]string{"a_b.c", "a.b_c"}, []Problem{{Code: blocking.ToolNameClash, Path: []string{"capabilities", "a_b.c"}}}},
	} {
		got := CheckToolNames(tc.keys)
		if len(got) != len(tc.want) {
			t.Errorf("%v: got %v, want %v", tc.keys, got, tc.want)
			continue
		}
		for i := range got {
			if got[i].Code != tc.want[i].Code || got[i].PathString() != JoinPath(tc.want[i].Path) {
				t.Errorf("%v: got %v, want %v", tc.keys, got[i], tc.want[i])
			}
		}
	}
}
