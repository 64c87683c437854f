package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAdmitRollback (issue 39): two versions of one package are admitted
// side by side; a plain re-admission of the older is refused
// admission_rollback naming --rollback, and so is every bad rollback
// request, writing nothing; with --rollback --reason it is admitted, and
// oa admissions list and show name who, why and what it went back from.
// Revoking the newer leaves the older admitted.
func TestAdmitRollback(t *testing.T) {
	p := newPublisher(t)
	old := p.publish("clinic-triage")
	worker := filepath.Join(p.bundle, "worker.cue")
	src, err := os.ReadFile(worker)
	if err != nil {
		t.Fatalf("the example's worker.cue: %v", err)
	}
	wantHas(t, "the example's worker.cue no longer names version 1.2.0", string(src), `version:  "1.2.0"`)
	if err := os.WriteFile(worker, []byte(strings.Replace(string(src), `version:  "1.2.0"`, `version:  "1.3.0"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	newer := p.publish("clinic-triage")
	_, oldDigest, _ := strings.Cut(old, "@")
	_, newDigest, _ := strings.Cut(newer, "@")
	p.ok("host", "init", "--publisher-key", p.path("publisher.pub"), "--authority-key", p.path("authority.pub"))
	p.ok("admit", old, "--as", "Dr Ada")
	p.ok("admit", newer, "--as", "Dr Ada")
	if out := p.ok("admissions", "show", oldDigest); !strings.Contains(out, ": active") {
		t.Fatalf("1.2.0 after admitting 1.3.0:\n%s", out)
	}

	listed := func() string { t.Helper(); return p.ok("admissions", "list") }
	before := listed()
	if got := p.refused("admission_rollback", "admit", old, "--as", "Dr Ada"); !strings.Contains(got, "--rollback") {
		t.Fatalf("the rollback refusal does not name --rollback:\n%s", got)
	}
	p.refused("rollback_reason_invalid", "admit", old, "--as", "Dr Ada", "--rollback")
	p.refused("rollback_reason_invalid", "admit", old, "--as", "Dr Ada", "--reason", "why")
	p.refused("rollback_reason_invalid", "admit", old, "--as", "Dr Ada", "--rollback", "--reason", "two\nlines")
	p.refused("rollback_unneeded", "admit", newer, "--as", "Dr Ada", "--rollback", "--reason", "why")
	p.refused("person_missing", "admit", old, "--rollback", "--reason", "why")
	if after := listed(); after != before {
		t.Fatalf("a refused admission changed the list:\n%s\nwas\n%s", after, before)
	}

	out := p.ok("admit", old, "--as", "Dr Ada", "--rollback", "--reason", "1.3.0 loses notes")
	wantHas(t, "admit --rollback", out, "admitted clinic-triage@1.2.0 as #3 by Dr Ada", "rollback from #2 (1.3.0 "+newDigest+"): 1.3.0 loses notes")
	list := listed()
	wantHas(t, "admissions list", list, "rollback from #2 (1.3.0 "+newDigest+"): 1.3.0 loses notes")
	if n := strings.Count(list, "rollback from"); n != 1 {
		t.Fatalf("admissions list names %d rollbacks, want 1:\n%s", n, list)
	}
	var records []struct {
		Seq      int64 `json:"seq"`
		Verified bool  `json:"verified"`
		Record   struct {
			Type       string `json:"type"`
			AdmittedBy string `json:"admittedBy"`
			Rollback   *struct {
				Reason  string `json:"reason"`
				FromSeq int64  `json:"fromSeq"`
			} `json:"rollback"`
		} `json:"record"`
	}
	wantJSON(t, "admissions list --json", p.ok("admissions", "list", "--json"), &records)
	if len(records) != 3 {
		t.Fatalf("admissions list --json: %d records, want 3: %+v", len(records), records)
	}
	r := records[2]
	if !r.Verified {
		t.Errorf("the rollback record as listed: verified = false, want true")
	}
	if r.Record.Type != "oa.admission/v2" {
		t.Errorf("the rollback record as listed: type = %q, want oa.admission/v2", r.Record.Type)
	}
	if r.Record.AdmittedBy != "Dr Ada" {
		t.Errorf("the rollback record as listed: admitted by %q, want Dr Ada", r.Record.AdmittedBy)
	}
	if r.Record.Rollback == nil {
		t.Fatalf("the rollback record as listed has no rollback: %+v", r)
	}
	if r.Record.Rollback.Reason != "1.3.0 loses notes" {
		t.Errorf("the rollback record as listed: reason = %q, want %q", r.Record.Rollback.Reason, "1.3.0 loses notes")
	}
	if r.Record.Rollback.FromSeq != 2 {
		t.Errorf("the rollback record as listed: from #%d, want #2", r.Record.Rollback.FromSeq)
	}
	if t.Failed() {
		t.FailNow()
	}
	if r := records[0]; r.Record.Type != "oa.admission/v1" {
		t.Fatalf("a plain record as listed: type = %q, want oa.admission/v1", r.Record.Type)
	}
	if r := records[0]; r.Record.Rollback != nil {
		t.Fatalf("a plain record as listed has a rollback: %+v", r.Record.Rollback)
	}
	if out := p.ok("admissions", "show", newDigest); !strings.Contains(out, ": active") {
		t.Fatalf("1.3.0 after the rollback:\n%s", out)
	}

	p.ok("revoke", newDigest, "--reason", "broken", "--as", "Dr Ada")
	p.refused("release_revoked", "admissions", "show", newDigest)
	out = p.ok("admissions", "show", oldDigest)
	wantHas(t, "1.2.0 after revoking 1.3.0", out, ": active", "rollback from #2")
}
