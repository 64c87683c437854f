package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/blocking"
)

// run executes the CLI with args and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	err := findCommand(root, args)
	if err == nil {
		err = root.Execute()
	}
	if err == nil {
		return 0
	}
	PrintError(stderr, err, JSONFlag(root))
	return ExitStatus(err)
}

// UsageError marks a mistake in the command line itself, a refusal like
// any other: exit status 2. Every such mistake is wrapped in it where it
// is found: flag parsing (the flag error func), positional arguments
// (wrapArgs), required flags and flag groups (checkFlags), an unknown
// command (findCommand) and the commands' own checks.
type UsageError struct{ error }

func ExitStatus(err error) int {
	if _, ok := err.(UsageError); ok {
		return 2
	}
	return blocking.ExitStatus(err)
}

// findCommand refuses an unknown command as a usage error before cobra
// runs anything: cobra finds the command the same way in Execute, and
// reports an unknown one as a plain error. Shell completion requests are
// left to cobra, which answers them itself.
func findCommand(root *cobra.Command, args []string) error {
	if len(args) > 0 && (args[0] == cobra.ShellCompRequestCmd || args[0] == cobra.ShellCompNoDescRequestCmd) {
		return nil
	}
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd(args...)
	if _, _, err := root.Find(args); err != nil {
		return UsageError{err}
	}
	return nil
}

// checkFlags is the root's PersistentPreRunE: it makes cobra's checks of
// required flags and flag groups (which cobra repeats, finding nothing,
// after it) usage errors.
func checkFlags(cmd *cobra.Command, _ []string) error {
	if err := cmd.ValidateRequiredFlags(); err != nil {
		return UsageError{err}
	}
	if err := cmd.ValidateFlagGroups(); err != nil {
		return UsageError{err}
	}
	return nil
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "oa",
		Short: "oa compiles, publishes, admits and serves governed agent workers",
		Long: `oa is a toolchain for governed agent workers.

A publisher writes a workflow bundle in CUE; oa compile turns it into
canonical Worker IR. Every refusal is a blocking code: oa explain CODE says
what it means and how to resolve it.

New here? oa quickstart runs the whole pipeline once on embedded defaults
(go run ./cmd/oa quickstart from a checkout; go install ./cmd/oa puts oa
in $(go env GOPATH)/bin).

Exit status: 0 success, 2 refused (a blocking code or a bad command line),
1 program fault.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.PersistentFlags().Bool("json", false, "print results (and refusals) as JSON")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return UsageError{err} })
	root.PersistentPreRunE = checkFlags
	root.AddCommand(newInitCmd(), newCompileCmd(), newInspectCmd(), newPushCmd(), newPullCmd(), newCopyCmd(), newKeysCmd(), newSignCmd(), newAttestCmd(), newVerifyCmd(), newHostCmd(), newPolicyCmd(), newAdmitCmd(), newAdmissionsCmd(), newRevokeCmd(), newStatusCmd(), newProjectCmd(), newRegistryCmd(), newConnectionCmd(), newResolveCmd(), newBindCmd(), newCoordinatorCmd(), newAttentionCmd(), newReceiptsCmd(), newQuickstartCmd(), newHarnessCmd(), newExplainCmd(), newVersionCmd())
	root.AddCommand(newFleetCmd(), newProvisionCmd(), newAgentCmd())
	root.AddCommand(newAuditCmd())
	groupCommands(root)
	for _, c := range root.Commands() {
		wrapArgs(c)
	}
	return root
}

// commandGroups sorts the top-level commands by who uses them, in the
// order oa --help shows them; a command in no group (explain, version,
// help, completion) is listed under cobra's "Additional Commands".
var commandGroups = []struct {
	id, title string
	commands  []string
}{
	{"publish", "Publish a worker package (publishers, conformance authorities):", []string{"init", "compile", "inspect", "push", "pull", "copy", "keys", "sign", "attest", "verify"}},
	{"host", "Host it (operators: admit, resolve, bind, install into clients):", []string{"host", "policy", "admit", "admissions", "revoke", "status", "project", "registry", "connection", "resolve", "bind", "harness"}},
	{"run", "Run it (operators and the people who decide on paused runs):", []string{"quickstart", "coordinator", "attention"}},
	{"fleet", "Run a fleet of hosts from one registry (fleet operators):", []string{"fleet", "provision", "agent"}},
	{"audit", "Audit it (auditors):", []string{"receipts", "audit"}},
}

// groupCommands gives every grouped top-level command its group; within
// a group commands stay in the order they were added, the pipeline's.
func groupCommands(root *cobra.Command) {
	cobra.EnableCommandSorting = false
	byName := map[string]*cobra.Command{}
	for _, c := range root.Commands() {
		byName[c.Name()] = c
	}
	for _, g := range commandGroups {
		root.AddGroup(&cobra.Group{ID: g.id, Title: g.title})
		for _, name := range g.commands {
			if c, ok := byName[name]; ok {
				c.GroupID = g.id
			}
		}
	}
}

// wrapArgs makes positional-argument mistakes usage errors (exit 2).
func wrapArgs(c *cobra.Command) {
	for _, sub := range c.Commands() {
		wrapArgs(sub)
	}
	if c.Args == nil {
		return
	}
	check := c.Args
	c.Args = func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return UsageError{err}
		}
		return nil
	}
}

func JSONFlag(cmd *cobra.Command) bool {
	v, _ := cmd.PersistentFlags().GetBool("json")
	return v
}

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
