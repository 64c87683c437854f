package coordinator_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector/sandbox"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/internal/store"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/coordtest"
	"github.com/oa-dev/oa/testkit/hosttest"
)

func TestReceiptTamperedRunIsRefusedNotRetried(t *testing.T) {
	s := serve(t, resolve.StarterRegistry(hosttest.Name))
	first := s.run(t, "once", "AB-1234")
	if first.Reason != contract.ReasonVerified {
		t.Fatalf("first: reason %s, want %s", first.Reason, contract.ReasonVerified)
	}
	if first.Proof != contract.ProofSealed {
		t.Fatalf("first: proof %s, want %s", first.Proof, contract.ProofSealed)
	}
	db := coordtest.RawDB(t, s.Home)
	var state []byte
	if err := db.QueryRow(`SELECT state FROM runs WHERE run_id = ?`, first.RunID).Scan(&state); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(store.Unpack(state), &doc); err != nil {
		t.Fatal(err)
	}
	doc["outcome"], doc["reason"] = "did_not_run", "app_offline"
	edited, _ := json.Marshal(doc)
	coordtest.Exec(t, db, `UPDATE runs SET state = ? WHERE run_id = ?`, edited, first.RunID)

	again := s.run(t, "once", "AB-1234")
	if again.Reason != contract.ReasonRunRecordTampered {
		t.Errorf("replay of a tampered run: reason %s, want %s", again.Reason, contract.ReasonRunRecordTampered)
	}
	if again.SafeToRetry {
		t.Error("replay of a tampered run: safe to retry, want not")
	}
	if again.Attempt != 0 {
		t.Errorf("replay of a tampered run: attempt %d, want 0", again.Attempt)
	}
	if again.ReceiptDigest != "" {
		t.Errorf("replay of a tampered run: receipt %q, want none", again.ReceiptDigest)
	}
	if notes, _ := sandbox.Notes(sandbox.Dir(s.Home), "AB-1234"); len(notes) != 1 {
		t.Fatalf("a tampered run was attempted again: %d notes", len(notes))
	}
	if n := coordtest.ReceiptCount(t, s.host); n != 1 {
		t.Fatalf("%d receipts after the refused replay, want 1", n)
	}
	if _, err := s.c.GetRun(context.Background(), first.RunID, 0); err != nil {
		t.Fatal(err)
	} else if res, _ := s.c.GetRun(context.Background(), first.RunID, 0); res.Reason != contract.ReasonRunRecordTampered {
		t.Fatalf("get_run of a tampered run: %+v", res)
	}
	if _, code := coordtest.VerifyCode(t, s.host); code != blocking.RunRecordTampered {
		t.Fatalf("receipts verify: %s, want run_record_tampered", code)
	}
}

func TestReceiptRunRolledBackToEarlierStateIsRefused(t *testing.T) {
	s := serve(t, resolve.StarterRegistry(hosttest.Name))
	db := coordtest.RawDB(t, s.Home)
	first := s.run(t, "off", "OF-0003")
	var attempt1 []byte
	if err := db.QueryRow(`SELECT state FROM runs WHERE run_id = ?`, first.RunID).Scan(&attempt1); err != nil {
		t.Fatal(err)
	}
	second := s.run(t, "off", "OF-0003")
	if second.Attempt != 2 {
		t.Fatalf("retry: %+v", second)
	}
	// The first attempt's state carries a valid MAC, but the chain holds a
	// receipt of attempt 2: putting it back must not buy a third attempt.
	coordtest.Exec(t, db, `UPDATE runs SET state = ? WHERE run_id = ?`, attempt1, first.RunID)
	if res := s.run(t, "off", "OF-0003"); res.Reason != contract.ReasonRunRecordTampered {
		t.Fatalf("rolled-back run: %+v", res)
	}
	if n := coordtest.ReceiptCount(t, s.host); n != 2 {
		t.Fatalf("%d receipts, want 2", n)
	}
}
