package translog_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"database/sql"
	"errors"
	"testing"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/ledger/translog"
)

// TestWitnessCosignsOnlyConsistentCheckpoints: the witness cosigns a
// log's checkpoints as it grows (the cosignature counts toward
// verify-proof's quorum), asks for its own old size when given another,
// and refuses a fork — the other branch at the same size, or a larger
// tree that does not extend the one it cosigned — changing nothing.
func TestWitnessCosignsOnlyConsistentCheckpoints(t *testing.T) {
	ctx := context.Background()
	a := newLog(t, "oa/clinic-1")
	b := newLog(t, "oa/clinic-1")
	b.key = a.key // the host signs both branches with its one key
	for i := range 8 {
		a.append(t, entry(i))
		if i == 3 {
			b.append(t, "forked")
		} else {
			b.append(t, entry(i))
		}
	}
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	signer, err := torchwood.NewCosignatureSigner("witness.example", priv)
	if err != nil {
		t.Fatal(err)
	}
	w := translog.NewWitness(signer, a.key.Verifier())
	state := newLog(t, "oa/witness-state") // the witness's own store
	add := func(old int64, proof tlog.TreeProof, cp []byte) ([]byte, error) {
		var sigs []byte
		err := state.db.Write(ctx, "witness", func(tx *sql.Tx) error {
			var err error
			sigs, err = w.AddCheckpoint(ctx, tx, old, proof, cp)
			return err
		})
		return sigs, err
	}
	a5, _ := translog.CheckpointAt(ctx, a.db, 5)
	a8, _ := translog.CheckpointAt(ctx, a.db, 8)
	b5, _ := translog.CheckpointAt(ctx, b.db, 5)
	b8, _ := translog.CheckpointAt(ctx, b.db, 8)
	if _, err := add(0, nil, a5.Note); err != nil {
		t.Fatalf("first checkpoint: %v", err)
	}
	var old *translog.ErrOldSize
	if _, err := add(0, nil, a8.Note); !errors.As(err, &old) || old.Size != 5 {
		t.Fatalf("a stale old size: %v", err)
	}
	if _, err := add(5, nil, b5.Note); !blocking.Has(err, blocking.LogForked) {
		t.Fatalf("the other branch at the same size: %v", err)
	}
	forked, _ := translog.ProveConsistency(ctx, b.db, 5, 8)
	if _, err := add(5, forked, b8.Note); !blocking.Has(err, blocking.LogForked) {
		t.Fatalf("a tree not extending the cosigned one: %v", err)
	}
	good, _ := translog.ProveConsistency(ctx, a.db, 5, 8)
	sigs, err := add(5, good, a8.Note)
	if err != nil {
		t.Fatalf("the honest next checkpoint: %v", err)
	}
	cosigned := append(append([]byte{}, a8.Note...), sigs...)
	p, err := translog.Prove(ctx, a.db, []byte(entry(6)))
	if err != nil {
		t.Fatal(err)
	}
	p.Checkpoint = cosigned
	wv, _ := translog.ParseVerifierKey(signer.Verifier().String())
	v, err := translog.VerifyProof(p.Marshal(), translog.Policy{Log: a.key.Verifier(), Witnesses: []note.Verifier{wv}, Quorum: 1}, nil)
	if err != nil || len(v.Cosigners) != 1 {
		t.Fatalf("the cosigned proof: %+v, %v", v, err)
	}
	if _, err := add(8, nil, b8.Note); !blocking.Has(err, blocking.LogForked) {
		t.Fatalf("the other branch after the honest one: %v", err)
	}
}
