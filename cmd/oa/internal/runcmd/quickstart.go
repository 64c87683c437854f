package runcmd

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/admit"
	"github.com/oa-dev/oa/cmd/oa/internal/cli"
	"github.com/oa-dev/oa/demo"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/internal/plural"
	"github.com/oa-dev/oa/ledger"
)

func newQuickstartCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "quickstart [DIR]",
		Short: "Run the whole pipeline on embedded defaults, then drive every sandbox case through a real MCP session",
		Long: `Quickstart makes a host in DIR (default: $OA_HOME when it is set, else a
new temporary folder), with nothing to install or start. DIR must not hold
a host yet (host_exists: nothing is overwritten). It compiles the clinic example, pushes it to
the OCI layout, signs it as a publisher, attests it as an independent
authority, admits it, signs a starter capability registry, verifies the
built-in sandbox connection, resolves and binds the plan. Then it starts
` + "`oa coordinator serve`" + ` as a subprocess, connects to it as an MCP client
and runs the workflow through every sandbox case, printing the integrity
chain, each outcome and the receipt chain, and the OA_HOME=… lines to keep
using the host. The sandbox cases fail on purpose; the coordinator's
operator lines about them are marked "expected". Exit 1 if any case does
not give its expected outcome.`,
		Args: cli.WantArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := quickstartDir(args)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			progress := out
			if cli.WantJSON(cmd) {
				progress = io.Discard
			}
			fmt.Fprintf(progress, "quickstart host in %s\n", dir)
			setup, err := demo.Prepare(cmd.Context(), dir, progress)
			if err != nil {
				return err
			}
			if err := printDemoChain(cmd, progress, setup); err != nil {
				return err
			}
			cases, err := driveSandbox(cmd, progress, dir)
			if err != nil {
				return err
			}
			report, err := verifyDemoReceipts(cmd, dir)
			if err != nil {
				return err
			}
			fmt.Fprintf(progress, "receipt chain: %s, intact=%v, head %s\n", plural.Count(report.Receipts, "receipt", "receipts"), report.OK, report.Head)
			printContinue(progress, dir)
			if cli.WantJSON(cmd) {
				if err := cli.PrintJSON(out, map[string]any{"home": dir, "reference": setup.Release.Ref.String(), "planDigest": setup.Binding.PlanDigest, "cases": cases, "receipts": report}); err != nil {
					return err
				}
			}
			for _, c := range cases {
				if c.Outcome != c.Want {
					return fmt.Errorf("case %s gave %s, want %s", c.Case, c.Outcome, c.Want)
				}
			}
			if !report.OK {
				return fmt.Errorf("the receipt chain is broken at #%d", report.FirstBroken)
			}
			return nil
		},
	}
}

// quickstartDir is the host folder quickstart makes: DIR, else $OA_HOME
// when it is set, else a new temporary folder. It must not hold a host.
func quickstartDir(args []string) (string, error) {
	var dir string
	switch {
	case len(args) == 1:
		dir = args[0]
	case os.Getenv("OA_HOME") != "":
		dir = os.Getenv("OA_HOME")
	default:
		return os.MkdirTemp("", "oa-quickstart-")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	return abs, demo.CheckFresh(abs)
}

// printContinue tells the person how to keep using the quickstart host:
// every later command needs OA_HOME to name it, and each line is one the
// person can paste: it starts oa the way this oa was started.
func printContinue(out io.Writer, dir string) {
	exe, _ := os.Executable()
	oa, goRun := continueCommand(exe, exec.LookPath)
	home := "OA_HOME=" + cli.ShellQuote(dir)
	fmt.Fprintf(out, "\nthe host stays in %s; continue with it:\n", dir)
	for _, line := range []string{
		"receipts verify",
		"receipts list",
		"attention list --all",
		"bind inspect " + demo.Deployment,
	} {
		fmt.Fprintf(out, "  %s %s %s\n", home, oa, line)
	}
	install := "harness install --client claude-code --deployment " + demo.Deployment + " --dir PROJECT_FOLDER"
	if goRun {
		fmt.Fprintf(out, "these lines use go run ./cmd/oa: run them from this checkout, or install oa once\n"+
			"(go install ./cmd/oa puts it in $(go env GOPATH)/bin) and type oa instead. An MCP client\n"+
			"starts the installed oa, so install it before:\n  %s oa %s\n", home, install)
		return
	}
	fmt.Fprintf(out, "  %s %s %s\n", home, oa, install)
}

// continueCommand is how a shell starts this oa again: "oa" when the oa
// on PATH is this executable, "go run ./cmd/oa" (goRun) when it is a
// temporary go run build, else its path.
func continueCommand(exe string, lookPath func(string) (string, error)) (cmd string, goRun bool) {
	if cli.IsGoRunBuild(exe) {
		return "go run ./cmd/oa", true
	}
	if p, err := lookPath("oa"); err == nil && sameFile(p, exe) {
		return "oa", false
	}
	if exe == "" {
		return "oa", false
	}
	return cli.ShellQuote(exe), false
}

func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// expectedLines labels each line the subprocess coordinator writes to its
// operator channel: the sandbox cases provoke failures on purpose, and a
// person reading the quickstart should not take them for its own.
type expectedLines struct {
	w       io.Writer
	pending []byte
}

// Write labels each whole line of p and keeps a partial one for later.
func (e *expectedLines) Write(p []byte) (int, error) {
	e.pending = append(e.pending, p...)
	for {
		i := bytes.IndexByte(e.pending, '\n')
		if i < 0 {
			return len(p), nil
		}
		if _, err := fmt.Fprintf(e.w, "  (expected, coordinator operator line) %s\n", e.pending[:i]); err != nil {
			return 0, err
		}
		e.pending = e.pending[i+1:]
	}
}

func printDemoChain(cmd *cobra.Command, out io.Writer, setup *demo.Setup) error {
	h, err := host.Open(cmd.Context(), setup.Home)
	if err != nil {
		return err
	}
	defer h.Close()
	in, err := admit.IntegrityOf(cmd.Context(), h, &setup.Release.Release, time.Now())
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "integrity chain:")
	cli.PrintIntegrity(out, setup.Release.Ref.String(), in)
	return in.Err()
}

// driveSandbox serves the demo deployment from a subprocess `oa
// coordinator serve` and runs every sandbox case through an MCP client,
// printing the tools and each case as it answers.
func driveSandbox(cmd *cobra.Command, out io.Writer, home string) ([]demo.Case, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	server := exec.Command(exe, "coordinator", "serve", "--deployment", demo.Deployment, "--effect-timeout", "3s")
	server.Env = append(os.Environ(), "OA_HOME="+home)
	fmt.Fprintln(out, "serving it with oa coordinator serve; its operator lines are marked (expected): the sandbox cases fail on purpose")
	server.Stderr = &expectedLines{w: cmd.ErrOrStderr()}
	return demo.DriveSandbox(cmd.Context(), server, demo.Driver{
		ClientVersion: cli.Version(),
		Tools: func(names []string) {
			fmt.Fprintf(out, "MCP session: %d tools: %s\n", len(names), strings.Join(names, " "))
		},
		Answered: func(c demo.Case) {
			mark := "✓"
			if c.Outcome != c.Want {
				mark = "✗"
			}
			fmt.Fprintf(out, "  %s %-24s %-8s → %-17s (%s)\n", mark, c.Case, c.Record, c.Outcome, c.Reason)
		},
	})
}

func verifyDemoReceipts(cmd *cobra.Command, home string) (*ledger.ChainReport, error) {
	h, err := host.Open(cmd.Context(), home)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	return ledger.Open(h).VerifyReceipts(cmd.Context())
}
