package cli

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/admit"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/sandbox"
	"github.com/oa-dev/oa/host"
)

// ConnectorOptions are how the command starts connections: their stderr
// is the command's, the sandbox keeps its records under $OA_HOME.
func ConnectorOptions(cmd *cobra.Command) connector.Options {
	return connector.Options{Stderr: cmd.ErrOrStderr(), SandboxDir: sandbox.Dir(Home())}
}

// PrintIntegrity prints a release's integrity chain as a tree.
func PrintIntegrity(out io.Writer, ref string, in *admit.Integrity) {
	fmt.Fprintln(out, ref)
	indent := ""
	for _, l := range in.Links {
		state := "✓"
		if l.Refusal != nil {
			state = "✗ " + string(l.Refusal.Code)
		}
		// Names end in one column however deep the branch.
		fmt.Fprintf(out, "%s└── %-*s %s  %s\n", indent, max(0, 44-len(indent)), l.Name, state, l.Detail)
		indent += "    "
	}
	for _, w := range in.Warnings {
		fmt.Fprintf(out, "warning: %s\n", w)
	}
}

// IsGoRunBuild reports whether exe is the temporary binary go run builds
// (…/go-build…/b001/exe/NAME), which is deleted when go run ends.
func IsGoRunBuild(exe string) bool {
	dir := filepath.Dir(exe)
	return filepath.Base(dir) == "exe" && strings.Contains(filepath.ToSlash(dir), "/go-build")
}

// WithHost opens this host, runs f and closes the host.
func WithHost(cmd *cobra.Command, f func(h *host.Host) error) error {
	h, err := host.Open(cmd.Context(), Home())
	if err != nil {
		return err
	}
	defer h.Close()
	return f(h)
}
