package main

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/bind"
	"github.com/oa-dev/oa/cmd/oa/internal/cli"
	"github.com/oa-dev/oa/connection"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/harness"
	"github.com/oa-dev/oa/host"
)

// registerCompletions teaches shell completion (oa completion SHELL) the
// names this host holds: --deployment and oa bind inspect's argument
// complete the bound deployments, the connection commands' NAME the
// host's connections, the attention commands' ID the open items,
// --person the persons the host policy names, and --client the clients
// oa installs into. It is done here, over the whole
// tree, so the command groups stay as they are; a command that has its
// own completion keeps it.
func registerCompletions(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if c.Flags().Lookup("deployment") != nil {
			_ = c.RegisterFlagCompletionFunc("deployment", hostNames(deployments))
		}
		if c.Flags().Lookup("client") != nil {
			_ = c.RegisterFlagCompletionFunc("client", cobra.FixedCompletions(harness.Clients, cobra.ShellCompDirectiveNoFileComp))
		}
		if c.Flags().Lookup("person") != nil {
			_ = c.RegisterFlagCompletionFunc("person", hostNames(persons))
		}
		if c.Flags().Lookup("scope") != nil {
			_ = c.RegisterFlagCompletionFunc("scope", cobra.FixedCompletions([]string{harness.ScopeLocal, harness.ScopeProject}, cobra.ShellCompDirectiveNoFileComp))
		}
		if c.ValidArgsFunction != nil || !c.Runnable() || c.Parent() == nil {
			return
		}
		switch group, name := c.Parent().Name(), c.Name(); {
		case group == "connection" && !slices.Contains(newConnectionCommands, name):
			c.ValidArgsFunction = firstArg(hostNames(connections))
		case group == "attention" && name != "list":
			c.ValidArgsFunction = firstArg(hostNames(attentionIDs))
		case group == "bind" && name == "inspect":
			c.ValidArgsFunction = firstArg(hostNames(deployments))
		}
	}
	walk(root)
}

// newConnectionCommands are the oa connection commands whose NAME is a
// new connection's (or, for list, that take none): no existing names are
// offered for them.
var newConnectionCommands = []string{"add-stdio", "add-remote", "add", "list"}

type completionFunc = func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective)

// firstArg completes the first positional argument only.
func firstArg(f completionFunc) completionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return f(cmd, args, toComplete)
	}
}

// hostNames completes from what read finds on this host. A folder with
// no host state is left as it is (nothing is created), and any failure
// completes nothing: completion never prints an error into the shell.
func hostNames(read func(context.Context, *host.Host) ([]string, error)) completionFunc {
	return func(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		home := cli.Home()
		if _, err := os.Stat(filepath.Join(home, host.StateFile)); err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx := cmd.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		h, err := host.Open(ctx, home)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		defer h.Close()
		names, err := read(ctx, h)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []cobra.Completion
		for _, n := range names {
			if strings.HasPrefix(n, toComplete) {
				out = append(out, n)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

func deployments(ctx context.Context, h *host.Host) ([]string, error) {
	return bind.Deployments(ctx, h)
}

func connections(ctx context.Context, h *host.Host) ([]string, error) {
	list, err := connection.List(ctx, h)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(list))
	for i, l := range list {
		names[i] = l.Name
	}
	return names, nil
}

func attentionIDs(ctx context.Context, h *host.Host) ([]string, error) {
	items, err := coordinator.AttentionRecords(h).List(ctx, false)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = it.ID
	}
	return ids, nil
}

// persons are the persons the host policy names, sorted.
func persons(_ context.Context, h *host.Host) ([]string, error) {
	if h.Policy == nil {
		return nil, nil
	}
	return slices.Sorted(maps.Keys(h.Policy.Persons)), nil
}
