package ledger

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/oa-dev/oa/internal/store"
)

// TestCheckpointFileOnlyMovesForward: an older checkpoint never replaces
// a later one in the file (two sealers finishing out of order).
func TestCheckpointFileOnlyMovesForward(t *testing.T) {
	home := t.TempDir()
	v := func(seq int64) *store.Version {
		return &store.Version{Seq: seq, Record: []byte(`{"seq":` + string(rune('0'+seq)) + `}`), Signature: []byte("sig")}
	}
	for _, seq := range []int64{2, 1, 3} {
		if err := writeCheckpointFile(home, v(seq)); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(home, CheckpointFile))
	if err != nil || !bytes.Contains(b, []byte("eyJzZXEiOjN9")) { // base64 of {"seq":3}
		t.Fatalf("file holds %s, %v", b, err)
	}
	if err := writeCheckpointFile(home, v(2)); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(filepath.Join(home, CheckpointFile)); !bytes.Equal(again, b) {
		t.Fatalf("an older checkpoint replaced a later one: %s", again)
	}
}

// writeCheckpointFile writes v to the checkpoint file as a seal that
// committed does.
func writeCheckpointFile(home string, v *store.Version) error {
	f := &checkpointFile{home: home}
	f.prepare(v)
	return f.keep(true)
}

// TestCheckpointFileKeepsOnlyWhatCommitted: of the copies a seal
// prepared (its write may run more than once), only the last is put in
// place, and only once the seal committed; nothing else is left in the
// folder.
func TestCheckpointFileKeepsOnlyWhatCommitted(t *testing.T) {
	home := t.TempDir()
	v := func(seq int64) *store.Version {
		return &store.Version{Seq: seq, Record: []byte(`{"seq":` + strconv.FormatInt(seq, 10) + `}`), Signature: []byte("sig")}
	}
	if err := writeCheckpointFile(home, v(1)); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(home, CheckpointFile))
	failed := &checkpointFile{home: home}
	failed.prepare(v(2))
	if err := failed.keep(false); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(filepath.Join(home, CheckpointFile)); !bytes.Equal(after, before) {
		t.Fatalf("a seal that did not commit changed the file: %s", after)
	}
	twice := &checkpointFile{home: home}
	twice.prepare(v(3))
	twice.prepare(v(4))
	if err := twice.keep(true); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(home, CheckpointFile))
	if !bytes.Contains(b, []byte("eyJzZXEiOjR9")) { // base64 of {"seq":4}
		t.Fatalf("file holds %s, want the last copy prepared", b)
	}
	if entries, _ := os.ReadDir(home); len(entries) != 1 {
		t.Fatalf("left in the folder: %v", entries)
	}
}

// BenchmarkWriteCheckpointFile: the checkpoint file write each seal adds
// (temporary file and fsync, the current one read, rename).
func BenchmarkWriteCheckpointFile(b *testing.B) {
	home := b.TempDir()
	rec := bytes.Repeat([]byte("x"), 400)
	seq := int64(0)
	b.ReportAllocs()
	for b.Loop() {
		seq++
		if err := writeCheckpointFile(home, &store.Version{Seq: seq, Record: append([]byte(`{"seq":`+strconv.FormatInt(seq, 10)+`,"p":"`), append(rec, '"', '}')...), Signature: rec[:70]}); err != nil {
			b.Fatal(err)
		}
	}
}
