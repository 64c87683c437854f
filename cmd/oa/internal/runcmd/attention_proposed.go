package runcmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/oa-dev/oa/coordinator/attention"
	"github.com/oa-dev/oa/internal/escape"
	"github.com/oa-dev/oa/ir"
)

// printProposed prints what the person decides on: the workflow's
// purpose and what done means, the exact call the paused step would send
// (its arguments as they will be sent) and what the run read before it.
// Values are printed as JSON with every control character escaped, so
// nothing read can move the terminal's cursor or colour its text.
func printProposed(out io.Writer, it *attention.Shown) {
	p := it.Proposed
	if p == nil {
		return
	}
	fmt.Fprintf(out, "  purpose    %s\n  done means %s\n", escape.OneLine(p.Purpose), escape.OneLine(p.DoneMeans))
	verb := "would write"
	if p.Risk == ir.ReadOnly {
		verb = "would read (it changes nothing)"
	}
	fmt.Fprintf(out, "  the step %s: connection %s, tool %s, with these arguments, exactly as they will be sent:\n%s\n", verb, p.Call.Connection, p.Call.Tool, indentJSON(p.Call.Arguments))
	steps := make([]string, 0, len(p.Read))
	for s := range p.Read {
		steps = append(steps, s)
	}
	slices.Sort(steps)
	switch {
	case p.ReadLeftOut:
		fmt.Fprintln(out, "  read so far: too large to keep; decide on the call alone, or reject")
	case len(steps) == 0:
		fmt.Fprintln(out, "  read so far: nothing (this is the run's first call)")
	default:
		fmt.Fprintln(out, "  read so far, which the decision rests on:")
		for _, s := range steps {
			fmt.Fprintf(out, "    step %s read:\n%s\n", s, indentJSON(p.Read[s]))
		}
	}
	if it.CallDigest != "" {
		fmt.Fprintf(out, "  call       %s (a decision holds for this call only: if the step would send anything else, it asks again)\n", it.CallDigest)
	}
}

// indentJSON is v indented under the item's fields, control characters
// escaped.
func indentJSON(v json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Indent(&b, v, "      ", "  "); err != nil {
		return "      " + escape.Controls(string(v))
	}
	return "      " + escape.Controls(b.String())
}
