package memo_test

import (
	"strconv"
	"testing"

	"github.com/oa-dev/oa/internal/memo"
)

// TestIDsDoNotShareParts: the same bytes cut into other parts give
// another id.
func TestIDsDoNotShareParts(t *testing.T) {
	if memo.IDOf([]byte("ab"), []byte("c")) == memo.IDOf([]byte("a"), []byte("bc")) {
		t.Fatal("two lists of parts share an id")
	}
	if a, b := memo.IDOf([]byte("a"), nil), memo.IDOf([]byte("a"), []byte{}); a != b {
		t.Fatal("the same parts (an empty one nil or not) gave two ids")
	}
}

// TestBoundedIsEmptiedWhenFull: a memo never holds more than Max values;
// the one put when it is full is kept.
func TestBoundedIsEmptiedWhenFull(t *testing.T) {
	const max = 16
	m := memo.Bounded[int]{Max: max}
	id := func(i int) memo.ID { return memo.IDOf([]byte(strconv.Itoa(i))) }
	for i := range max {
		m.Put(id(i), i)
	}
	if v, ok := m.Get(id(3)); !ok || v != 3 || m.Len() != max {
		t.Fatalf("full memo: %d, %v, %d values", v, ok, m.Len())
	}
	m.Put(id(max), max)
	if m.Len() != 1 {
		t.Fatalf("%d values, want 1 after emptying at %d", m.Len(), max)
	}
	if v, ok := m.Get(id(max)); !ok || v != max {
		t.Fatalf("the last value: %d, %v", v, ok)
	}
	if _, ok := m.Get(id(3)); ok {
		t.Fatal("a value from before the memo was emptied")
	}
}
