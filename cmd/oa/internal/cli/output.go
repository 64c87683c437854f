package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"

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

// Output formats of the root's --format flag.
const (
	FormatText = "text"
	FormatJSON = "json"
)

// AddOutputFlags registers the root's output flags, which every command
// inherits: --json, and --format text|json beside it as peers (kubectl,
// docker, oras) spell it, --format json being --json. A command with a
// --format of its own (oa runs: table, json or csv) keeps it.
func AddOutputFlags(root *cobra.Command) {
	root.PersistentFlags().Bool("json", false, "print results (and refusals) as JSON")
	root.PersistentFlags().String("format", FormatText, "output format: text, or json (the same as --json)")
}

// CheckFormat refuses, as a usage error, a --format of the root's other
// than text or json, and --format text with --json.
func CheckFormat(cmd *cobra.Command) error {
	f := cmd.Flags().Lookup("format")
	if f == nil || f != cmd.Root().PersistentFlags().Lookup("format") {
		return nil // the command's own --format checks itself
	}
	switch v := f.Value.String(); v {
	case FormatJSON:
	case FormatText:
		if j, _ := cmd.Flags().GetBool("json"); j && f.Changed {
			return Usage(fmt.Errorf("--json and --format text ask for two formats: give one"))
		}
	default:
		return Usage(fmt.Errorf("--format %q is not an output format: give text or json", v))
	}
	return nil
}

// FormatJSONIn reports whether args (before a lone "--") ask for JSON by
// --format: how a command line refused before its flags were parsed is
// printed.
func FormatJSONIn(args []string) bool {
	for i, a := range args {
		switch {
		case a == "--":
			return false
		case a == "--format=json", a == "--format" && i+1 < len(args) && args[i+1] == FormatJSON:
			return true
		}
	}
	return false
}

// JSONFlag reports whether the root's --json (or --format json) was
// given: how a refusal is printed.
func JSONFlag(cmd *cobra.Command) bool {
	v, _ := cmd.PersistentFlags().GetBool("json")
	f, _ := cmd.PersistentFlags().GetString("format")
	return v || f == FormatJSON
}

// WantJSON reports whether the command was asked for JSON output: --json,
// or --format json.
func WantJSON(cmd *cobra.Command) bool {
	v, _ := cmd.Flags().GetBool("json")
	f, _ := cmd.Flags().GetString("format")
	return v || f == FormatJSON
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

// DebugFlag reports whether the root's --debug was given: whether a
// failure's details are printed after it.
func DebugFlag(cmd *cobra.Command) bool {
	v, _ := cmd.Root().PersistentFlags().GetBool("debug")
	return v
}

// PrintFailure renders a refusal with its code and fix, or a fault, and
// with debug what it was made from (DebugDetails): after it, each line
// starting "oa: debug: ", or as the "debug" list of the JSON object.
// It writes to the operator's stderr only: nothing an agent is shown or
// telemetry exports ever carries these details.
func PrintFailure(w io.Writer, err error, asJSON, debug bool) {
	var details []string
	if debug {
		details = DebugDetails(err)
	}
	printFailure(w, err, asJSON, details)
	if !asJSON {
		for _, d := range details {
			fmt.Fprintf(w, "oa: debug: %s\n", d)
		}
	}
}

// DebugDetails is what a failure was made from, for the operator: for
// each refusal made from another error (a registry's transport error, the
// wrapped cause of a refusal) its code and that error's text; for a
// fault, the types of the errors in its chain. Control characters (a
// remote server's text may hold terminal escapes) are shown escaped.
func DebugDetails(err error) []string {
	var out []string
	if refusals := blocking.Refusals(err); refusals != nil {
		for _, r := range refusals {
			if r.Cause != nil {
				out = append(out, fmt.Sprintf("%s: cause: %s", r.Code, printable(r.Cause.Error())))
			} else {
				out = append(out, fmt.Sprintf("%s: no further detail (the refusal was not made from another error)", r.Code))
			}
		}
		return out
	}
	var chain []string
	for e := err; e != nil; e = errors.Unwrap(e) {
		chain = append(chain, fmt.Sprintf("%T", e))
	}
	return append(out, "error chain: "+strings.Join(chain, " → "))
}

// printable escapes every control character of s but the line break and
// the tab, as \xNN.
func printable(s string) string {
	var b strings.Builder
	for _, r := range strings.ToValidUTF8(s, "?") {
		if r != '\n' && r != '\t' && unicode.IsControl(r) {
			fmt.Fprintf(&b, "\\x%02x", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// The three kinds of failure, which start what oa prints on stderr
// ("oa: refused (N problems):", "oa: usage error: ", "oa: error: ") and
// are the "kind" of the --json object.
const (
	kindRefused = "refused" // a blocking code, exit status 2
	kindUsage   = "usage"   // a mistake in the command line, exit status 2
	kindFault   = "fault"   // a program fault, exit status 1
)

func printFailure(w io.Writer, err error, asJSON bool, details []string) {
	refusals := blocking.Refusals(err)
	kind := kindFault
	var usage UsageError
	switch {
	case refusals != nil:
		kind = kindRefused
	case errors.As(err, &usage):
		kind = kindUsage
	}
	if asJSON {
		out := map[string]any{"exitStatus": ExitStatus(err), "kind": kind}
		if details != nil {
			out["debug"] = details
		}
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
	switch kind {
	case kindRefused:
		fmt.Fprintf(w, "oa: refused (%d problem", len(refusals))
		if len(refusals) != 1 {
			fmt.Fprint(w, "s")
		}
		fmt.Fprintln(w, "):")
		for _, r := range refusals {
			fmt.Fprintln(w, r.Error())
		}
	case kindUsage:
		fmt.Fprintf(w, "oa: usage error: %v\n", err)
	default:
		fmt.Fprintf(w, "oa: error: %v\n", err)
	}
}
