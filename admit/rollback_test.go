package admit

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oa-dev/oa/blocking"
)

// TestRollbackIsExplicitSignedAndRecorded: going back to an older release
// is refused admission_rollback (naming --rollback) when not asked for;
// asked for with a reason it is admitted as an oa.admission/v2 record
// naming who, why and the admission it went back from, listed and
// verified; the newer release stays admitted. Every bad request is a
// refusal that writes nothing.
func TestRollbackIsExplicitSignedAndRecorded(t *testing.T) {
	f := newFixture(t, nil)
	h := f.host()
	ctx := context.Background()
	old := f.release("1.0.0", f.publisher.signer, f.auth.signer)
	newer := f.release("1.1.0", f.publisher.signer, f.auth.signer)
	admitWith := func(opts AdmitOptions) (*Record, error) {
		t.Helper()
		opts.AdmittedBy, opts.Now = "Dr Ada", now
		_, rec, err := Admit(ctx, h, f.pinned(old), opts)
		return rec, err
	}
	count := func() int {
		t.Helper()
		list, err := Admissions(ctx, h, "")
		if err != nil {
			t.Fatal(err)
		}
		return len(list)
	}

	// Before any newer admission there is nothing to go back from.
	if _, err := admitWith(AdmitOptions{Rollback: true, Reason: "first"}); code(err) != blocking.RollbackUnneeded {
		t.Fatalf("rollback of a release never admitted: %v", err)
	}
	if _, _, err := f.admit(h, old, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := admitWith(AdmitOptions{Rollback: true, Reason: "again"}); code(err) != blocking.RollbackUnneeded {
		t.Fatalf("rollback of the package's newest admission: %v", err)
	}
	if _, _, err := f.admit(h, newer, ""); err != nil {
		t.Fatal(err)
	}
	if count() != 2 {
		t.Fatalf("admissions = %d, want 2", count())
	}

	for name, c := range map[string]struct {
		opts AdmitOptions
		want blocking.Code
	}{
		"plain":                {AdmitOptions{}, blocking.AdmissionRollback},
		"reason, no rollback":  {AdmitOptions{Reason: "why"}, blocking.RollbackReasonInvalid},
		"rollback, no reason":  {AdmitOptions{Rollback: true}, blocking.RollbackReasonInvalid},
		"rollback, blank":      {AdmitOptions{Rollback: true, Reason: "  "}, blocking.RollbackReasonInvalid},
		"rollback, two lines":  {AdmitOptions{Rollback: true, Reason: "a\nb"}, blocking.RollbackReasonInvalid},
		"rollback, too long":   {AdmitOptions{Rollback: true, Reason: strings.Repeat("x", MaxRollbackReason+1)}, blocking.RollbackReasonInvalid},
		"rollback, not UTF-8":  {AdmitOptions{Rollback: true, Reason: "\xff"}, blocking.RollbackReasonInvalid},
		"dry run of rollback":  {AdmitOptions{Rollback: true, Reason: "why", DryRun: true}, ""},
		"dry run, no rollback": {AdmitOptions{DryRun: true}, blocking.AdmissionRollback},
	} {
		rec, err := admitWith(c.opts)
		if code(err) != c.want || rec != nil || (c.want == "" && err != nil) {
			t.Fatalf("%s: %v (record %v), want %q", name, err, rec, c.want)
		}
		if c.want == blocking.AdmissionRollback && !strings.Contains(err.Error(), "--rollback") {
			t.Fatalf("%s: the refusal does not name --rollback: %v", name, err)
		}
		if count() != 2 {
			t.Fatalf("%s wrote an admission", name)
		}
	}

	rec, err := admitWith(AdmitOptions{Rollback: true, Reason: "1.1.0 loses notes"})
	if err != nil {
		t.Fatal(err)
	}
	want := Rollback{Reason: "1.1.0 loses notes", FromSeq: 2, FromArtifactDigest: newer.Digest.String(), FromVersion: "1.1.0"}
	if rec.Type != RecordTypeRollback || rec.Seq != 3 || rec.AdmittedBy != "Dr Ada" || rec.Rollback == nil || *rec.Rollback != want {
		t.Fatalf("rollback record = %+v (rollback %+v)", rec, rec.Rollback)
	}
	st, err := StatusOf(ctx, h, old.Digest.String(), now)
	if err != nil || st.State != Active || st.Record.Seq != 3 || st.Record.Rollback == nil || st.Record.Rollback.Reason != want.Reason {
		t.Fatalf("status of the release gone back to: %+v, %v", st, err)
	}
	if st, err := StatusOf(ctx, h, newer.Digest.String(), now); err != nil || st.State != Active || st.Record.Seq != 2 {
		t.Fatalf("the newer release after the rollback: %+v, %v", st, err)
	}
	list, err := Admissions(ctx, h, "clinic-triage")
	if err != nil || len(list) != 3 {
		t.Fatalf("list = %+v, %v", list, err)
	}
	for i, l := range list {
		if !l.Verified || l.Seq != int64(i+1) || (i == 2) != (l.Record.Rollback != nil) {
			t.Fatalf("listed #%d: %+v", l.Seq, l)
		}
		if wantType := map[bool]string{false: RecordType, true: RecordTypeRollback}[i == 2]; l.Record.Type != wantType {
			t.Fatalf("listed #%d has type %s, want %s", l.Seq, l.Record.Type, wantType)
		}
	}
	// Now the older release is the newest admission: admitting the newer
	// again goes back too, and is refused the same way.
	if _, _, err := f.admit(h, newer, ""); code(err) != blocking.AdmissionRollback {
		t.Fatalf("re-admitting the newer release after the rollback: %v", err)
	}
}

// TestRecordTypesHoldTheirFields: a v1 record carries no rollback and a
// v2 record carries one with a reason; anything else is not read.
func TestRecordTypesHoldTheirFields(t *testing.T) {
	rb := &Rollback{Reason: "why", FromSeq: 1, FromArtifactDigest: "sha256:aa"}
	for _, c := range []struct {
		rec  Record
		want bool
	}{
		{Record{Type: RecordType}, true},
		{Record{Type: RecordType, Rollback: rb}, false},
		{Record{Type: RecordTypeRollback, Rollback: rb}, true},
		{Record{Type: RecordTypeRollback}, false},
		{Record{Type: RecordTypeRollback, Rollback: &Rollback{FromSeq: 1}}, false},
		{Record{Type: "oa.admission/v3", Rollback: rb}, false},
	} {
		if got := knownType(&c.rec); got != c.want {
			t.Fatalf("knownType(%s, rollback %v) = %v", c.rec.Type, c.rec.Rollback, got)
		}
	}
}

// TestInsertOnlyAfterTheNewestDecidedOn: an admission whose history was
// decided on an older newest admission of its package (another process
// admitted meanwhile) writes nothing and consumes no sequence number, so
// Admit decides again and a rollback is never made silently.
func TestInsertOnlyAfterTheNewestDecidedOn(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, filepath.Join(t.TempDir(), "state.db"))
	if seq, err := s.insertAdmissionAfter(ctx, "p", "sha256:a", 0, numbered("p")); err != nil || seq != 1 {
		t.Fatalf("first admission = %d, %v", seq, err)
	}
	if _, err := s.insertAdmissionAfter(ctx, "p", "sha256:b", 0, numbered("p")); !errors.Is(err, errAdmittedMeanwhile) {
		t.Fatalf("decided on no admission, one written meanwhile: %v", err)
	}
	if all, err := s.Admissions(ctx, "p"); err != nil || len(all) != 1 {
		t.Fatalf("a refused insert wrote: %+v, %v", all, err)
	}
	if seq, err := s.insertAdmissionAfter(ctx, "p", "sha256:b", 1, numbered("p")); err != nil || seq != 2 {
		t.Fatalf("decided on #1 = %d, %v; want 2 (no number consumed)", seq, err)
	}
	if seq, err := s.insertAdmissionAfter(ctx, "other", "sha256:c", 0, numbered("other")); err != nil || seq != 1 {
		t.Fatalf("another package = %d, %v", seq, err)
	}
}
