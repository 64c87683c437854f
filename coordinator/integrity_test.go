package coordinator_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oa-dev/oa/admit"
	"github.com/oa-dev/oa/bind"
	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/coordtest"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// reopen closes the served coordinator and opens a new one on the same
// home, as a restart does.
func (s *served) reopen() (*coordinator.Coordinator, error) {
	s.c.Close()
	c, err := coordinator.Open(context.Background(), coordinator.Options{Home: s.Home, Deployment: "clinic", EffectTimeout: 2 * time.Second})
	if c != nil {
		s.c = c
	}
	return c, err
}

// D1: a run row removed behind the coordinator's back must never let its
// request run again, whether the coordinator is restarted or still
// serving: the note is on the record once. A run row removed from the
// middle of the history (another request's) stops every new attempt
// after a restart.
func TestDeletedRunRowIsRefusedNeverRepeated(t *testing.T) {
	for _, restart := range []bool{false, true} {
		name := "while serving"
		if restart {
			name = "after a restart"
		}
		t.Run(name, func(t *testing.T) {
			s := serve(t, resolve.StarterRegistry(hosttest.Name))
			if res := s.run(t, "dup-1", "AB-1234"); res.Reason != contract.ReasonVerified {
				t.Fatalf("first: %+v", res)
			}
			coordtest.Exec(t, coordtest.RawDB(t, s.Home), `DELETE FROM runs WHERE request_id = 'dup-1'`)
			if restart {
				if _, err := s.reopen(); err != nil {
					t.Fatal(err)
				}
			}
			res := s.run(t, "dup-1", "AB-1234")
			wantResult(t, "the same call after its run row was removed", res, contract.OutcomeDidNotRun, contract.ReasonHostRecordsDisagree)
			if res.SafeToRetry {
				t.Error("the same call after its run row was removed: safe to retry, want not")
			}
			if res.RunID != "" {
				t.Errorf("the same call after its run row was removed: run %q, want none", res.RunID)
			}
			if n := coordtest.Notes(t, s.Home, "AB-1234"); n != 1 {
				t.Fatalf("the note is on the record %d times, want once", n)
			}
		})
	}
	t.Run("another run removed from the middle", func(t *testing.T) {
		s := serve(t, resolve.StarterRegistry(hosttest.Name))
		s.run(t, "r-1", "AB-1234")
		s.run(t, "r-2", "CD-5678")
		db := coordtest.RawDB(t, s.Home)
		// The receipt's request columns are not signed: cleared, the
		// removed run is found by the count of runs the host signed.
		coordtest.Exec(t, db, `UPDATE receipts SET request_id = NULL`)
		coordtest.Exec(t, db, `DELETE FROM runs WHERE request_id = 'r-1'`)
		if _, err := s.reopen(); err != nil {
			t.Fatal(err)
		}
		if res := s.run(t, "r-1", "AB-1234"); res.Reason != contract.ReasonHostRecordsDisagree {
			t.Fatalf("a new attempt over a history missing a run: %+v", res)
		}
		if n := coordtest.Notes(t, s.Home, "AB-1234"); n != 1 {
			t.Fatalf("the note is on the record %d times, want once", n)
		}
	})
}

// D2: when a receipt could not be sealed (the newest receipt, the
// checkpoints or the receipt key's pin removed), no effect is made: the
// new request is refused did_not_run with a named reason, and a restart
// refuses to serve.
func TestUnsealableStoreRefusesBeforeTheEffect(t *testing.T) {
	cases := map[string]struct {
		tamper func(t *testing.T, db *sql.DB)
		code   blocking.Code
	}{
		"newest receipt removed": {func(t *testing.T, db *sql.DB) {
			coordtest.Exec(t, db, `DELETE FROM receipts WHERE seq = (SELECT max(seq) FROM receipts)`)
		}, blocking.ReceiptCheckpointMismatch},
		"checkpoints removed": {func(t *testing.T, db *sql.DB) {
			coordtest.Exec(t, db, `DELETE FROM versions WHERE kind = 'checkpoint'`)
		}, blocking.ReceiptCheckpointMismatch},
		"receipt key pin removed": {func(t *testing.T, db *sql.DB) {
			coordtest.Exec(t, db, `DELETE FROM versions WHERE kind = 'receipt-key'`)
		}, blocking.ReceiptKeyUnpinned},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := serve(t, resolve.StarterRegistry(hosttest.Name))
			s.run(t, "r-1", "AB-1234")
			s.run(t, "r-2", "CD-5678")
			tc.tamper(t, coordtest.RawDB(t, s.Home))
			res := s.run(t, "after", "EF-0001")
			wantResult(t, "a new request over an unsealable store", res, contract.OutcomeDidNotRun, contract.ReasonHostRecordsDisagree)
			if res.Proof != contract.ProofNone {
				t.Errorf("a new request over an unsealable store: proof %s, want %s", res.Proof, contract.ProofNone)
			}
			if n := coordtest.Notes(t, s.Home, "EF-0001"); n != 0 {
				t.Fatalf("the effect was made: %d notes", n)
			}
			row, err := s.host.Store().QueryContext(context.Background(), `SELECT 1 FROM runs WHERE request_id = 'after'`)
			if err != nil {
				t.Fatal(err)
			}
			started := row.Next()
			row.Close()
			if started {
				t.Fatal("a run was stored for the refused request")
			}
			if _, err := s.reopen(); !hosttest.HasCode(t, err, tc.code) {
				t.Fatalf("a restart over the store: %v, want %s", err, tc.code)
			}
		})
	}
}

// D6: removing a revocation row must not put the revoked release back in
// service: the coordinator, the plan check (`oa bind inspect`) and
// `oa receipts verify` all name it.
func TestDeletedRevocationKeepsTheReleaseOutOfService(t *testing.T) {
	ctx := context.Background()
	s := serve(t, resolve.StarterRegistry(hosttest.Name))
	s.run(t, "before", "AB-1234")
	if _, err := admit.Revoke(ctx, s.host, s.Release.Descriptor.Digest.String(), "withdrawn", "Dr Ada", s.Now); err != nil {
		t.Fatal(err)
	}
	if res := s.run(t, "revoked", "CD-5678"); res.Reason != contract.ReasonNotAdmitted {
		t.Fatalf("revoked: %+v", res)
	}
	db := coordtest.RawDB(t, s.Home)
	coordtest.Exec(t, db, `DROP TRIGGER IF EXISTS revocations_no_delete`)
	coordtest.Exec(t, db, `DELETE FROM revocations`)

	before := coordtest.Notes(t, s.Home, "CD-5678")
	if res := s.run(t, "after-delete", "CD-5678"); res.Reason != contract.ReasonNotAdmitted {
		t.Fatalf("a run after the revocation was removed: reason %s, want %s", res.Reason, contract.ReasonNotAdmitted)
	}
	if n := coordtest.Notes(t, s.Home, "CD-5678"); n != before {
		t.Fatalf("a run after the revocation was removed wrote: %d notes, want %d", n, before)
	}
	st, err := admit.StatusOf(ctx, s.host, s.Release.Descriptor.Digest.String(), s.Now)
	if err != nil {
		t.Fatal(err)
	}
	if st.State == admit.Active {
		t.Fatalf("admission status after the revocation was removed: %s, want not active", st.State)
	}
	if st.Why == nil {
		t.Fatalf("admission status after the revocation was removed gives no reason: %+v", st)
	}
	if st.Why.Code != blocking.RevocationsDisagree {
		t.Fatalf("admission status after the revocation was removed: code %s, want %s", st.Why.Code, blocking.RevocationsDisagree)
	}
	if _, err := admit.RequireActive(ctx, s.host, s.Release.Descriptor.Digest.String(), s.Now); !hosttest.HasCode(t, err, blocking.RevocationsDisagree) {
		t.Fatalf("RequireActive: %v", err)
	}
	b, err := bind.Current(ctx, s.host, "clinic")
	if err != nil {
		t.Fatal(err)
	}
	art, err := bind.FetchRelease(ctx, s.host, b, oci.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	report, _, err := bind.Check(ctx, s.host, b, art, bind.CheckOptions{Now: s.Now})
	if err != nil {
		t.Fatal(err)
	}
	if report.Approved {
		t.Fatalf("bind check after the revocation was removed: approved, want not: %+v", report)
	}
	if !report.NotAdmitted() {
		t.Fatalf("bind check after the revocation was removed does not say not admitted: %+v", report)
	}
	if r, code := coordtest.VerifyCode(t, s.host); code != blocking.RevocationsDisagree {
		t.Fatalf("receipts verify: %+v", r)
	}
	// Removing the signed head too leaves the copy in $OA_HOME.
	coordtest.Exec(t, db, `DELETE FROM versions WHERE kind = 'revocation-head'`)
	if _, err := admit.RequireActive(ctx, s.host, s.Release.Descriptor.Digest.String(), s.Now); !hosttest.HasCode(t, err, blocking.RevocationsDisagree) {
		t.Fatalf("RequireActive with the head removed: %v", err)
	}
	if _, err := s.reopen(); err == nil {
		t.Fatal("a session started over removed revocations")
	}
}

// D4: a policy narrowed while a session runs stops its effects, as it
// stops `oa bind inspect`: the per-step plan check notices the file.
func TestNarrowedPolicyStopsTheLiveSession(t *testing.T) {
	s := serve(t, resolve.StarterRegistry(hosttest.Name))
	if res := s.run(t, "before", "AB-1234"); res.Reason != contract.ReasonVerified {
		t.Fatalf("before: %+v", res)
	}
	path := filepath.Join(s.Home, host.PolicyFile)
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	narrowed := strings.Replace(string(src), `max_risk:     "consequential"`, `max_risk:     "read_only"`, 1)
	if narrowed == string(src) {
		t.Fatal("the test policy has no max_risk to narrow")
	}
	if err := os.WriteFile(path, []byte(narrowed), 0o600); err != nil {
		t.Fatal(err)
	}
	before := coordtest.Notes(t, s.Home, "CD-5678")
	wantResult(t, "a run under the narrowed policy", s.run(t, "after", "CD-5678"), contract.OutcomeDidNotRun, contract.ReasonNotAdmitted)
	if n := coordtest.Notes(t, s.Home, "CD-5678"); n != before {
		t.Fatalf("a run under the narrowed policy wrote: %d notes, want %d", n, before)
	}
	// Put back, the policy is the session's again.
	if err := os.WriteFile(path, src, 0o600); err != nil {
		t.Fatal(err)
	}
	if res := s.run(t, "restored", "CD-5678"); res.Reason != contract.ReasonVerified {
		t.Fatalf("a run under the restored policy: %+v", res)
	}
}
