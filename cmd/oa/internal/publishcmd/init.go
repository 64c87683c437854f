package publishcmd

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/cmd/oa/internal/cli"
	"github.com/oa-dev/oa/examples"
)

func newInitCmd() *cobra.Command {
	var example string
	cmd := &cobra.Command{
		Use:   "init DIR",
		Short: "Write a working example bundle into DIR",
		Long: "Init writes an example worker bundle into DIR, which must not exist or be empty.\nExamples: " +
			strings.Join(examples.Names(), ", ") + ".",
		Args: cli.WantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			if _, err := examples.Bundle(example); err != nil {
				return cli.Usage(fmt.Errorf("unknown example %q (have %s)", example, strings.Join(examples.Names(), ", ")))
			}
			if err := ensureEmptyDir(dir); err != nil {
				return err
			}
			if err := examples.Write(example, dir); err != nil {
				return fmt.Errorf("writing bundle: %w", err)
			}
			if cli.WantJSON(cmd) {
				return cli.PrintJSON(cmd.OutOrStdout(), map[string]string{"bundle": dir, "example": example})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote the %s example bundle to %s\nnext: oa compile %s\n", example, dir, dir)
			return nil
		},
	}
	cmd.Flags().StringVar(&example, "example", examples.Default, "which example bundle to write")
	return cmd
}

// ensureEmptyDir creates dir or accepts it when empty, so init never
// overwrites anything.
func ensureEmptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return os.MkdirAll(filepath.Clean(dir), 0o755)
	case err != nil:
		return cli.Usage(fmt.Errorf("%s is not a folder oa can write into", dir))
	case len(entries) > 0:
		return cli.Usage(fmt.Errorf("%s is not empty; init never overwrites files, choose a new folder", dir))
	}
	return nil
}
