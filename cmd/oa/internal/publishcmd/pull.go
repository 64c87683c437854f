package publishcmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/cmd/oa/internal/cli"
	"github.com/oa-dev/oa/internal/plural"
	"github.com/oa-dev/oa/pipeline"
)

func newPullCmd() *cobra.Command {
	var refs cli.RefFlags
	var out string
	cmd := &cobra.Command{
		Use:   "pull REF@sha256:…",
		Short: "Pull a worker artifact, verifying every digest, into a folder",
		Long: `Pull reads the artifact REF@sha256:… names, verifies every blob against its
digest, the IR annotation against the IR layer and the layers against the IR,
and writes worker.ir.json, components/, persona and skills/ into -o DIR
(default NAME-VERSION). The folder is written beside DIR and renamed into
place, so nothing is written through a link; DIR must be new, empty, or an
earlier pull's output (marked by its .oa-pull file). A tag-only reference
is refused with the digest it resolves to.`,
		Args: cli.WantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out != "" {
				// Refuse a folder pull may not replace before reading anything.
				if err := pipeline.CheckPullDir(out); err != nil {
					return err
				}
			}
			pinned, err := refs.OpenPinned(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			ref, art := pinned.Release.Ref, pinned.Artifact
			if out == "" {
				out = art.Worker.Name + "-" + art.Worker.Version
			}
			p := cli.NewProgress(cmd)
			p.Step("verified %s (%d layers); writing to %s", ref.String(), len(art.Layers), out)
			files, err := pipeline.Pull(out, art)
			if err != nil {
				return err
			}
			if cli.WantJSON(cmd) {
				return cli.PrintJSON(cmd.OutOrStdout(), map[string]any{"reference": ref.String(), "workerIrDigest": art.IRDigest, "output": out, "files": files})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s\nworkerIrDigest %s\nwrote %s to %s\n", ref.String(), art.IRDigest, plural.Count(len(files), "file", "files"), out)
			return nil
		},
	}
	refs.Register(cmd)
	cmd.Flags().StringVarP(&out, "output", "o", "", "folder to write the artifact's parts into")
	return cmd
}
