package cli

import "github.com/spf13/cobra"

// CommandGroup is one heading of oa --help (who uses the commands under
// it) with its top-level commands, in the order oa --help lists them.
// Each command package declares its own, so a command's group is stated
// where the command is added and no list of names repeats the commands.
type CommandGroup struct {
	ID, Title string
	Commands  []*cobra.Command
}

// AddTo adds the group's heading and its commands to root, each command
// naming the group as its own.
func (g CommandGroup) AddTo(root *cobra.Command) {
	root.AddGroup(&cobra.Group{ID: g.ID, Title: g.Title})
	for _, c := range g.Commands {
		c.GroupID = g.ID
		root.AddCommand(c)
	}
}
