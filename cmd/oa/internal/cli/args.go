package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// WantArgs is every command's cobra Args check: at least min and at most
// max positional arguments (max < 0: no upper bound). Unlike cobra's own
// checks ("accepts 1 arg(s), received 0") its error names the argument
// that is missing, as the command's Use line writes it, and points at
// --help. It never repeats an argument given, which may be anything. The
// root wraps it as a usage error (exit status 2).
func WantArgs(min, max int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		names := positionalNames(cmd.Use)
		help := fmt.Sprintf("(usage: %s; see %s --help)", usageLine(cmd), cmd.CommandPath())
		switch {
		case len(args) < min:
			missing := "an argument"
			if len(args) < len(names) {
				missing = names[len(args)]
			}
			return fmt.Errorf("missing %s %s", missing, help)
		case max == 0 && len(args) > 0:
			return fmt.Errorf("no arguments expected, got %d %s", len(args), help)
		case max > 0 && len(args) > max:
			return fmt.Errorf("at most %d argument(s) expected, got %d %s", max, len(args), help)
		}
		return nil
	}
}

// usageLine is the command's path followed by its Use line's arguments.
func usageLine(cmd *cobra.Command) string {
	line := cmd.CommandPath()
	if _, rest, ok := strings.Cut(cmd.Use, " "); ok {
		line += " " + rest
	}
	return line
}

// positionalNames returns the positional arguments a Use line names, in
// order, without their optional brackets: "copy SRC DST" gives SRC, DST;
// "sign --key KEY REF@sha256:…" gives REF@sha256:… (KEY is the value of
// --key); after a lone "--" every word is positional.
func positionalNames(use string) []string {
	words := strings.Fields(use)
	var names []string
	afterDash := false
	for i := 1; i < len(words); i++ {
		w := words[i]
		switch {
		case afterDash:
			names = append(names, strings.Trim(w, "[]"))
		case w == "--":
			afterDash = true
		case strings.HasPrefix(w, "-") || strings.HasPrefix(w, "[-"):
			// A flag; the next word is its value unless the flag closes
			// its bracket, or the next word is a flag itself.
			if !strings.HasSuffix(w, "]") && i+1 < len(words) && !strings.HasPrefix(strings.TrimLeft(words[i+1], "["), "-") {
				i++
			}
		default:
			names = append(names, strings.Trim(w, "[]"))
		}
	}
	return names
}
