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

// BenchmarkWriteCheckpointFile: the checkpoint file write each seal adds
// (read the current one, temporary file, fsync, rename).
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
