package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/cmd/oa/internal/auditcmd"
	"github.com/oa-dev/oa/cmd/oa/internal/cli"
	"github.com/oa-dev/oa/cmd/oa/internal/fleetcmd"
	"github.com/oa-dev/oa/cmd/oa/internal/hostcmd"
	"github.com/oa-dev/oa/cmd/oa/internal/publishcmd"
	"github.com/oa-dev/oa/cmd/oa/internal/runcmd"
)

// run executes the CLI with args and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	asJSON, debug := cli.JSONFlag, cli.DebugFlag
	err := findCommand(root, args)
	if err == nil {
		err = root.Execute()
	} else {
		// Refused before cobra parsed a flag: the words say how to print.
		asJSON = func(*cobra.Command) bool { return givenBefore(args, "--json") || cli.FormatJSONIn(args) }
		debug = func(*cobra.Command) bool { return givenBefore(args, "--debug") }
	}
	if err == nil {
		return 0
	}
	cli.PrintFailure(stderr, err, asJSON(root), debug(root))
	return cli.ExitStatus(err)
}

// givenBefore reports whether the boolean flag is among args, before a
// lone "--" (--json, --json=true).
func givenBefore(args []string, flag string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case flag, flag + "=true", flag + "=1":
			return true
		}
	}
	return false
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
	found, rest, err := root.Find(args)
	// Execute adds the completion command again after help, the order
	// oa --help lists them in.
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			root.RemoveCommand(c)
		}
	}
	if found.Runnable() || !found.HasSubCommands() {
		if err != nil {
			return cli.Usage(err)
		}
		return nil
	}
	// A group: cobra checks the word after it only at the root, and below
	// the root takes any words and prints the group's help, exit 0, so a
	// mistyped `oa attention aprove` did nothing, silently.
	if word := firstWord(found, rest); word != "" && word != "help" {
		return cli.Usage(unknownCommand(found, word))
	}
	return nil
}

// unknownCommand is the usage error for a word that names no subcommand
// of group, with cobra's suggestions ("Did you mean this?").
func unknownCommand(group *cobra.Command, word string) error {
	msg := fmt.Sprintf("unknown command %q for %q", word, group.CommandPath())
	if group.SuggestionsMinimumDistance <= 0 {
		group.SuggestionsMinimumDistance = 2 // cobra's default, set only at the root
	}
	if s := group.SuggestionsFor(word); len(s) > 0 {
		msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
	}
	return fmt.Errorf("%s\n\nRun '%s --help' for usage", msg, group.CommandPath())
}

// firstWord is the first of args that is not a flag or a flag's value, as
// cobra tells them apart when it finds a command (an unknown flag is
// taken to have a value), or "".
func firstWord(cmd *cobra.Command, args []string) string {
	cmd.InheritedFlags() // merges the persistent flags into cmd.Flags()
	flags := cmd.Flags()
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			if i+1 < len(args) {
				return args[i+1]
			}
			return ""
		case !strings.HasPrefix(a, "-") || a == "-":
			return a
		case strings.Contains(a, "="):
		case strings.HasPrefix(a, "--"):
			if f := flags.Lookup(a[2:]); f == nil || f.NoOptDefVal == "" {
				i++
			}
		case len(a) == 2:
			if f := flags.ShorthandLookup(a[1:]); f == nil || f.NoOptDefVal == "" {
				i++
			}
		}
	}
	return ""
}

// checkFlags is the root's PersistentPreRunE: it makes cobra's checks of
// required flags and flag groups (which cobra repeats, finding nothing,
// after it) usage errors, and refuses a --format that is not text or
// json (cli.CheckFormat).
func checkFlags(cmd *cobra.Command, _ []string) error {
	if err := cmd.ValidateRequiredFlags(); err != nil {
		return cli.Usage(err)
	}
	if err := cmd.ValidateFlagGroups(); err != nil {
		return cli.Usage(err)
	}
	return cli.CheckFormat(cmd)
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
	cli.AddOutputFlags(root)
	root.PersistentFlags().Bool("debug", false, "after a failure, print what it was made from (a registry's transport error, the cause of a refusal) to stderr: for the operator, never sent to an agent or telemetry")
	setVersionFlag(root)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return cli.Usage(err) })
	root.PersistentPreRunE = checkFlags
	// Within a group commands stay in the order they were added, the
	// pipeline's.
	cobra.EnableCommandSorting = false
	for _, g := range commandGroups() {
		g.AddTo(root)
	}
	root.AddCommand(newExplainCmd(), newVersionCmd())
	for _, c := range root.Commands() {
		wrapArgs(c)
		deprecationOnStderr(c)
	}
	registerCompletions(root)
	return root
}

// commandGroups are oa --help's headings, in the order it shows them:
// the top-level commands sorted by who uses them. Each package declares
// its group and the commands in it.
func commandGroups() []cli.CommandGroup {
	return []cli.CommandGroup{publishcmd.Group(), hostcmd.Group(), runcmd.Group(), fleetcmd.Group(), auditcmd.Group()}
}

// ungroupedCommands are the top-level commands deliberately in no group,
// listed under cobra's "Additional Commands": they serve every reader
// (explain, version) or are cobra's own (help, completion).
var ungroupedCommands = map[string]bool{"explain": true, "version": true, "help": true, "completion": true}

// deprecationOnStderr sends cobra's notice for a deprecated command
// (Command "add" is deprecated, use …) to stderr, where a script's
// operator sees it: cobra prints it with the command's output writer,
// stdout, where it would spoil --json. The command's result still goes to
// stdout.
func deprecationOnStderr(c *cobra.Command) {
	for _, sub := range c.Commands() {
		deprecationOnStderr(sub)
	}
	if c.Deprecated == "" || c.RunE == nil {
		return
	}
	stdout, runE := c.OutOrStdout(), c.RunE
	c.SetOut(c.ErrOrStderr())
	c.RunE = func(cmd *cobra.Command, args []string) error {
		cmd.SetOut(stdout)
		return runE(cmd, args)
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
			return cli.Usage(err)
		}
		return nil
	}
}
