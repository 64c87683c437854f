package resolve

import (
	"testing"

	"github.com/oa-dev/oa/ir"
)

// The indexed ceiling allows exactly what ir.CeilingAllows allows.
func TestCeilingSetIsCeilingAllows(t *testing.T) {
	patterns := [][]string{
		nil,
		{"*"},
		{"records.*"},
		{"records.read"},
		{"records.*", "records.read"},
		{"mail.send", "records.note.*", "records.read"},
		{"records.*", "records.note.*", "rec*"},
		{"records.*", "records.note.append", "records.read", "records.x.*"},
	}
	keys := []string{"", "*", "r", "rec", "records", "records.", "records.*", "records.read", "records.reader", "records.note", "records.note.", "records.note.append", "records.x", "records.x.y", "mail.send", "mail.sendx", "recx"}
	for _, ps := range patterns {
		c := newCeilingSet(ps)
		for _, k := range keys {
			if got, want := c.allows(k), ir.CeilingAllows(ps, k); got != want {
				t.Errorf("patterns %q key %q: allows %v, CeilingAllows %v", ps, k, got, want)
			}
		}
	}
}
