package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/oci"
)

func newPullCmd() *cobra.Command {
	var refs refFlags
	var out string
	cmd := &cobra.Command{
		Use:   "pull REF@sha256:…",
		Short: "Pull a worker artifact, verifying every digest, into a folder",
		Long: `Pull reads the artifact REF@sha256:… names, verifies every blob against its
digest, the IR annotation against the IR layer and the layers against the IR,
and writes worker.ir.json, components/, persona and skills/ into -o DIR
(default NAME-VERSION). A tag-only reference is refused with the digest it
resolves to.`,
		Args: wantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, _, art, err := refs.openPinned(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if out == "" {
				out = art.Worker.Name + "-" + art.Worker.Version
			}
			p := newProgress(cmd.ErrOrStderr())
			p.step("verified %s (%d layers); writing to %s", ref.String(), len(art.Layers), out)
			files, err := writeArtifact(out, art)
			if err != nil {
				return err
			}
			if wantJSON(cmd) {
				return printJSON(cmd.OutOrStdout(), map[string]any{"reference": ref.String(), "workerIrDigest": art.IRDigest, "output": out, "files": files})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s\nworkerIrDigest %s\nwrote %d files to %s\n", ref.String(), art.IRDigest, len(files), out)
			return nil
		},
	}
	refs.register(cmd)
	cmd.Flags().StringVarP(&out, "output", "o", "", "folder to write the artifact's parts into")
	return cmd
}

// writeArtifact writes each layer to dir under its title, refusing titles
// that would leave dir.
func writeArtifact(dir string, art *oci.Artifact) ([]string, error) {
	var files []string
	for _, l := range art.Layers {
		title := filepath.FromSlash(l.Descriptor.Annotations["org.opencontainers.image.title"])
		if title == "" || filepath.IsAbs(title) || strings.HasPrefix(filepath.Clean(title), "..") {
			return nil, fmt.Errorf("layer %s has an unsafe title", l.Descriptor.Digest)
		}
		path := filepath.Join(dir, title)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(path, l.Data, 0o644); err != nil {
			return nil, err
		}
		files = append(files, title)
	}
	return files, nil
}
