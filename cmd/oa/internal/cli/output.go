package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/blocking"
)

// UsageError marks a mistake in the command line itself, a refusal like
// any other: exit status 2. Every such mistake is wrapped in it where it
// is found: flag parsing (the flag error func), positional arguments
// (wrapArgs), required flags and flag groups (checkFlags), an unknown
// command (findCommand) and the commands' own checks.
type UsageError struct{ Err error }

// Error is the mistake's message.
func (e UsageError) Error() string { return e.Err.Error() }

// Unwrap returns the mistake.
func (e UsageError) Unwrap() error { return e.Err }

// Usage marks err as a mistake in the command line: exit status 2.
func Usage(err error) error { return UsageError{err} }

// ExitStatus is the exit status err ends oa with: 2 for a usage error or
// a refusal, 1 for a program fault (blocking.ExitStatus).
func ExitStatus(err error) int {
	var usage UsageError
	if errors.As(err, &usage) {
		return 2
	}
	return blocking.ExitStatus(err)
}

// JSONFlag reports whether the root's --json was given: how a refusal is
// printed.
func JSONFlag(cmd *cobra.Command) bool {
	v, _ := cmd.PersistentFlags().GetBool("json")
	return v
}

// WantJSON reports whether the command was asked for JSON output.
func WantJSON(cmd *cobra.Command) bool {
	v, _ := cmd.Flags().GetBool("json")
	return v
}

// PrintJSON writes v as indented JSON.
func PrintJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// PrintJSONResult writes v as indented JSON and then returns v's own
// verdict (a refusal when what it reports does not hold), so that --json
// output is printed whole before the exit status says the outcome.
func PrintJSONResult(w io.Writer, v interface{ Err() error }) error {
	if err := PrintJSON(w, v); err != nil {
		return err
	}
	return v.Err()
}

// PrintError renders a refusal with its code and fix, or a fault.
func PrintError(w io.Writer, err error, asJSON bool) {
	refusals := blocking.Refusals(err)
	if asJSON {
		out := map[string]any{"exitStatus": ExitStatus(err)}
		if refusals != nil {
			type shown struct {
				*blocking.Error
				Stage blocking.Stage `json:"stage"`
				Title string         `json:"title"`
				Fix   string         `json:"fix"`
			}
			list := make([]shown, len(refusals))
			for i, r := range refusals {
				e := r.Entry()
				list[i] = shown{r, e.Stage, e.Title, e.Copy}
			}
			out["refusals"] = list
		} else {
			out["error"] = err.Error()
		}
		_ = PrintJSON(w, out)
		return
	}
	if refusals != nil {
		fmt.Fprintf(w, "oa: refused (%d problem", len(refusals))
		if len(refusals) != 1 {
			fmt.Fprint(w, "s")
		}
		fmt.Fprintln(w, "):")
		for _, r := range refusals {
			fmt.Fprintln(w, r.Error())
		}
		return
	}
	fmt.Fprintf(w, "oa: %v\n", err)
}
