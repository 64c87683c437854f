package cli

import (
	"bytes"
	"testing"
)

// TestJSONArrayWritesWhatPrintJSONWrites: an array written an element at
// a time is byte for byte PrintJSON's of the whole slice — empty, one
// element, several, nested and with characters PrintJSON leaves
// unescaped.
func TestJSONArrayWritesWhatPrintJSONWrites(t *testing.T) {
	type elem struct {
		Digest string         `json:"digest"`
		Record map[string]any `json:"record"`
	}
	lists := [][]elem{
		{},
		{{Digest: "sha256:a", Record: map[string]any{"seq": 1, "evidence": []string{"<saved>", "&"}}}},
		{{Digest: "a"}, {Digest: "b", Record: map[string]any{}}, {Digest: "c", Record: map[string]any{"nested": map[string]any{"x": []int{1, 2}}}}},
	}
	for _, list := range lists {
		var whole, streamed bytes.Buffer
		if err := PrintJSON(&whole, list); err != nil {
			t.Fatal(err)
		}
		a := NewJSONArray(&streamed)
		for _, e := range list {
			if err := a.Add(e); err != nil {
				t.Fatal(err)
			}
		}
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		if whole.String() != streamed.String() {
			t.Errorf("streamed:\n%s\nPrintJSON:\n%s", streamed.String(), whole.String())
		}
	}
}
