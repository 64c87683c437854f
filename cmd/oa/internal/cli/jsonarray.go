package cli

import (
	"bytes"
	"encoding/json"
	"io"
)

// JSONArray writes a JSON array one element at a time, byte for byte
// what PrintJSON writes for the whole slice: for lists that grow with a
// host's history (`oa receipts list`), which are never held whole.
type JSONArray struct {
	w     io.Writer
	n     int
	buf   bytes.Buffer
	elems *json.Encoder
}

// NewJSONArray starts an array on w; Close ends it.
func NewJSONArray(w io.Writer) *JSONArray {
	a := &JSONArray{w: w}
	a.elems = json.NewEncoder(&a.buf)
	a.elems.SetIndent("  ", "  ")
	a.elems.SetEscapeHTML(false)
	return a
}

// Add writes v as the array's next element.
func (a *JSONArray) Add(v any) error {
	a.buf.Reset()
	if a.n == 0 {
		a.buf.WriteString("[\n  ")
	} else {
		a.buf.WriteString(",\n  ")
	}
	if err := a.elems.Encode(v); err != nil {
		return err
	}
	a.buf.Truncate(a.buf.Len() - 1) // Encode's newline: the separator or Close ends the line
	a.n++
	_, err := a.w.Write(a.buf.Bytes())
	return err
}

// Close ends the array ("[]" when nothing was added).
func (a *JSONArray) Close() error {
	end := "\n]\n"
	if a.n == 0 {
		end = "[]\n"
	}
	_, err := io.WriteString(a.w, end)
	return err
}
