package store

import (
	"context"
	"path/filepath"
	"testing"
)

// TestSignedStampIgnoresCheckpointsOnly: a receipt checkpoint (one per
// sealed run) leaves the stamp as it was, so a sealed run does not make
// the next plan check recompute; a version of any other kind, before or
// after "checkpoint" in name order, changes it.
func TestSignedStampIgnoresCheckpointsOnly(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, filepath.Join(t.TempDir(), "oa.db"))
	stamp := func() Stamp {
		t.Helper()
		s, err := db.SignedStamp(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := stamp()
	for range 3 {
		if _, err := db.Versions().Insert(ctx, KindCheckpoint, CheckpointKey, appendSeq); err != nil {
			t.Fatal(err)
		}
	}
	if got := stamp(); got != before {
		t.Fatalf("checkpoints changed the stamp: %+v, was %+v", got, before)
	}
	for _, kind := range []string{KindBinding, KindConnection, KindRegistry, "revocation-head", "receipt-key"} {
		if _, err := db.Versions().Insert(ctx, kind, "k", appendSeq); err != nil {
			t.Fatal(err)
		}
		got := stamp()
		if got == before || got.Versions != before.Versions+1 {
			t.Fatalf("a %s version: stamp %+v, was %+v; want one version more", kind, got, before)
		}
		before = got
		// A checkpoint sealed after it changes nothing again.
		if _, err := db.Versions().Insert(ctx, KindCheckpoint, CheckpointKey, appendSeq); err != nil {
			t.Fatal(err)
		}
		if got := stamp(); got != before {
			t.Fatalf("a checkpoint after a %s version changed the stamp: %+v, was %+v", kind, got, before)
		}
	}
}
