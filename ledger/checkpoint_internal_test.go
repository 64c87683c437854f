package ledger

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/oa-dev/oa/internal/store"
)

// TestCheckpointFileOnlyMovesForward: an older checkpoint never replaces
// a later one in the file (two sealers finishing out of order).
func TestCheckpointFileOnlyMovesForward(t *testing.T) {
	home := t.TempDir()
	for _, seq := range []int64{2, 1, 3} {
		if err := writeCheckpointFile(home, copyOf(seq)); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(home, CheckpointFile))
	if err != nil || !bytes.Contains(b, []byte("eyJzZXEiOjN9")) { // base64 of {"seq":3}
		t.Fatalf("file holds %s, %v", b, err)
	}
	if err := writeCheckpointFile(home, copyOf(2)); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(filepath.Join(home, CheckpointFile)); !bytes.Equal(again, b) {
		t.Fatalf("an older checkpoint replaced a later one: %s", again)
	}
}

// copyOf is a signed copy numbered seq (its signature is not checked by
// the file's writers).
func copyOf(seq int64) *store.Version {
	return &store.Version{Seq: seq, Record: []byte(`{"seq":` + strconv.FormatInt(seq, 10) + `}`), Signature: []byte("sig")}
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
	if err := writeCheckpointFile(home, copyOf(1)); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(home, CheckpointFile))
	failed := &checkpointFile{home: home}
	failed.prepare(copyOf(2))
	if err := failed.keep(false); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(filepath.Join(home, CheckpointFile)); !bytes.Equal(after, before) {
		t.Fatalf("a seal that did not commit changed the file: %s", after)
	}
	twice := &checkpointFile{home: home}
	twice.prepare(copyOf(3))
	twice.prepare(copyOf(4))
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

// TestCommittedCopiesAreWrittenTogether: the copies of seals that
// committed while a copy was being written are written once, the newest
// of them, and every seal waiting is answered when it is in place.
func TestCommittedCopiesAreWrittenTogether(t *testing.T) {
	home := t.TempDir()
	var writes []int64
	underWay, release := make(chan struct{}), make(chan struct{})
	w := newCopyWriter(home, func(home string, v *store.Version) error {
		writes = append(writes, v.Seq)
		if len(writes) == 1 {
			close(underWay)
			<-release
		}
		return keepCopy(home, v)
	})
	errs := make(chan error, 9)
	go func() { errs <- w.write(copyOf(1)) }()
	<-underWay // a write is under way while 8 seals commit
	for _, seq := range []int64{5, 3, 9, 2, 8, 4, 7, 6} {
		go func() { errs <- w.write(copyOf(seq)) }()
	}
	for w.waiting.Waiting() < 8 {
		time.Sleep(time.Millisecond)
	}
	close(release)
	for range 9 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(writes, []int64{1, 9}) {
		t.Fatalf("wrote %v, want the first, then the newest of the 8 waiting (9) once", writes)
	}
	if b, _ := os.ReadFile(filepath.Join(home, CheckpointFile)); !bytes.Contains(b, []byte("eyJzZXEiOjl9")) { // base64 of {"seq":9}
		t.Fatalf("file holds %s", b)
	}
}

// TestCopySignedWhileAnotherIsStaged: a checkpoint signed while another
// seal's copy is being staged is not staged itself; committed, it is
// written after the commit; not committed, nothing is written.
func TestCopySignedWhileAnotherIsStaged(t *testing.T) {
	home := t.TempDir()
	staging := &copyWriterOf(home).staging
	staging.Store(true) // another seal's copy is being written
	defer staging.Store(false)
	failed := &checkpointFile{home: home}
	failed.prepare(copyOf(1))
	if len(failed.pending) != 0 {
		t.Fatal("a copy was staged while another was")
	}
	if err := failed.keep(false); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(home); len(entries) != 0 {
		t.Fatalf("a seal that did not commit wrote %v", entries)
	}
	kept := &checkpointFile{home: home}
	kept.prepare(copyOf(2))
	if err := kept.keep(true); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(home, CheckpointFile)); !bytes.Contains(b, []byte("eyJzZXEiOjJ9")) { // base64 of {"seq":2}
		t.Fatalf("file holds %s, want the committed copy", b)
	}
	if entries, _ := os.ReadDir(home); len(entries) != 1 {
		t.Fatalf("left in the folder: %v", entries)
	}
}

// TestOnlyALoneSealStagesItsCopy: a seal under way beside another does
// not stage its copy, even with none being staged; committed, it is
// written after, and the file ends at the newest.
func TestOnlyALoneSealStagesItsCopy(t *testing.T) {
	home := t.TempDir()
	w := copyWriterOf(home)
	lone, beside := &checkpointFile{home: home}, &checkpointFile{home: home}
	lone.prepare(copyOf(1))
	if len(lone.pending) != 1 {
		t.Fatal("a lone seal did not stage its copy")
	}
	for w.staging.Load() {
		time.Sleep(time.Millisecond)
	}
	beside.prepare(copyOf(2))
	if len(beside.pending) != 0 {
		t.Fatal("a seal under way beside another staged its copy")
	}
	if err := lone.keep(true); err != nil {
		t.Fatal(err)
	}
	if err := beside.keep(true); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(home, CheckpointFile)); !bytes.Contains(b, []byte("eyJzZXEiOjJ9")) { // base64 of {"seq":2}
		t.Fatalf("file holds %s, want the newest", b)
	}
	if n := w.sealing.Load(); n != 0 {
		t.Fatalf("%d seals counted under way after both kept", n)
	}
}
