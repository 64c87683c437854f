package coordinator_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oa-dev/oa/connector/sandbox"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/coordinator/attention"
	"github.com/oa-dev/oa/internal/store"
	"github.com/oa-dev/oa/ledger"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// TestPauseAfterEffectCarriesItsCompletion: an effect's completion is not
// a write of its own but rides on the run's next one (ledger.RunWriter).
// Here the next write is a pause — the check after the effect reads
// through a capability that needs a person's approval — so the pause must
// carry the completion: resumed, the run skips the effect and the note is
// written once. Without it the resumed run finds the effect only in
// flight and sends it again.
func TestPauseAfterEffectCarriesItsCompletion(t *testing.T) {
	ctx := context.Background()
	registry := strings.Replace(resolve.StarterRegistry(hosttest.Name), `description: "Read one record with its status and notes."`, "description: \"Read one record with its status and notes.\"\n\t\tapproval: \"required\"", 1)
	s := serve(t, registry)
	approve := func(res *coordinator.Result, step string) {
		t.Helper()
		item, err := s.c.AttentionItem(ctx, res.AttentionID)
		if err != nil {
			t.Fatalf("pause before step %s: %v", step, err)
		}
		if item.Step != step {
			t.Fatalf("paused at step %q, want %s", item.Step, step)
		}
		if _, err := s.c.Decide(ctx, attention.Decision{AttentionID: res.AttentionID, Decision: contract.DecisionApprove, By: "Dr Ada", Channel: "cli"}); err != nil {
			t.Fatal(err)
		}
	}
	first := s.run(t, "twice-paused", "AB-1234")
	if first.Reason != contract.ReasonApprovalRequired {
		t.Fatalf("first pause: %+v", first)
	}
	approve(first, "load_record")
	second := s.run(t, "twice-paused", "AB-1234")
	wantResult(t, "paused at the check after the effect", second, contract.OutcomeNeedsReview, contract.ReasonApprovalAfterChange)
	row, err := ledger.Open(s.host).Tables().RunByRequest(ctx, "clinic", "twice-paused")
	if err != nil {
		t.Fatalf("the paused run's row: %v", err)
	}
	if row == nil {
		t.Fatal("the paused run has no row")
	}
	state := string(store.Unpack(row.State))
	if !strings.Contains(state, `"completed":["append_note"]`) {
		t.Fatalf("the paused run's stored state does not record the effect as completed: %s", state)
	}
	if strings.Contains(state, `"in_flight":"append_note"`) {
		t.Fatalf("the paused run's stored state still records the effect in flight: %s", state)
	}
	approve(second, "confirm_note")
	done := s.run(t, "twice-paused", "AB-1234")
	wantResult(t, "resumed", done, contract.OutcomeDone, contract.ReasonVerified)
	if notes, _ := sandbox.Notes(sandbox.Dir(s.Home), "AB-1234"); len(notes) != 1 {
		t.Fatalf("%d notes, want the one the effect wrote before the pause", len(notes))
	}
}

// TestNoReaderFindsARunEndedUnsealed: a run's terminal write and its
// receipt are one transaction (ledger.FinishRun), so a reader polling the
// store while runs end never finds a terminal run without its receipt.
// (With the two as separate writes the window between them was found
// within a few runs.)
func TestNoReaderFindsARunEndedUnsealed(t *testing.T) {
	ctx := context.Background()
	s := serve(t, resolve.StarterRegistry(hosttest.Name))
	db, err := store.Open(ctx, s.Home+"/state.db")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var stop atomic.Bool
	var wg sync.WaitGroup
	var seen, unsealed atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			states, err := runStatesOf(ctx, db, "clinic")
			if err != nil {
				t.Error(err)
				return
			}
			for _, row := range states {
				state := string(store.Unpack(row))
				if strings.Contains(state, `"status":"terminal"`) {
					seen.Add(1)
					if !strings.Contains(state, `"receipt_digest":"sha256:`) {
						unsealed.Add(1)
					}
				}
			}
		}
	}()
	for i := range 30 {
		res := s.run(t, fmt.Sprintf("seal-%d", i), "AB-1234")
		if res.Proof != contract.ProofSealed {
			t.Fatalf("run %d: %+v", i, res)
		}
		time.Sleep(time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	if seen.Load() == 0 {
		t.Fatal("the reader never saw a terminal run")
	}
	if n := unsealed.Load(); n > 0 {
		t.Fatalf("a reader found a terminal run without its receipt %d times", n)
	}
}
