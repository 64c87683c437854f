package sandbox

import (
	"context"
	"fmt"
	"sync"
	"testing"
)

// TestConcurrentAppendsFromTwoStores: two stores on one folder (two
// coordinator processes) each append a hundred notes at once to one
// record; every note is kept exactly once with its own id, whatever
// batches the group commit made.
func TestConcurrentAppendsFromTwoStores(t *testing.T) {
	dir := t.TempDir()
	stores := []*store{newStore(dir), newStore(dir)}
	const n = 100
	ids := make([]string, 2*n)
	var wg sync.WaitGroup
	for si, st := range stores {
		for i := range n {
			wg.Go(func() {
				r := appendNote(context.Background(), st, args{Record: "AB-1234", Text: fmt.Sprintf("note %d of store %d", i, si)})
				if r.errCode != "" {
					t.Errorf("append %d/%d: %s", si, i, r.errCode)
					return
				}
				ids[si*n+i] = r.out.(map[string]any)["note_id"].(string)
			})
		}
	}
	wg.Wait()
	notes, err := Notes(dir, "AB-1234")
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != 2*n {
		t.Fatalf("%d notes on the record, want %d", len(notes), 2*n)
	}
	seenText, seenID := map[string]bool{}, map[string]bool{}
	for _, note := range notes {
		if seenText[note.Text] || seenID[note.ID] {
			t.Fatalf("note %+v is on the record twice", note)
		}
		seenText[note.Text], seenID[note.ID] = true, true
	}
	for _, id := range ids {
		if !seenID[id] {
			t.Fatalf("append answered note id %q, which is not on the record", id)
		}
	}
}
