package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/harness"
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
(default NAME-VERSION). The folder is written beside DIR and renamed into
place, so nothing is written through a link; DIR must be new, empty, or an
earlier pull's output (marked by its .oa-pull file). A tag-only reference
is refused with the digest it resolves to.`,
		Args: wantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out != "" {
				// Refuse a folder pull may not replace before reading anything.
				if err := checkPullOutput(out); err != nil {
					return err
				}
			}
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

// pullMarker is the file oa pull leaves in its output folder, so that a
// later pull knows the folder is its own to replace.
const pullMarker = ".oa-pull"

// writeArtifact writes each layer under its title into a new folder
// staged beside dir, then renames it into place (harness.Stage): nothing
// is ever written through a link already in dir. dir must be missing,
// empty, or a folder an earlier pull wrote (it holds pullMarker);
// anything else refuses pull_output_not_owned and changes nothing.
func writeArtifact(dir string, art *oci.Artifact) ([]string, error) {
	if err := checkPullOutput(dir); err != nil {
		return nil, err
	}
	files := map[string][]byte{pullMarker: []byte(art.Descriptor.Digest.String() + "\n")}
	var names []string
	for _, l := range art.Layers {
		title := l.Descriptor.Annotations["org.opencontainers.image.title"]
		clean := path.Clean(title)
		if title == "" || clean != title || path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") || clean == pullMarker {
			return nil, fmt.Errorf("layer %s has an unsafe title", l.Descriptor.Digest)
		}
		files[clean] = l.Data
		names = append(names, clean)
	}
	fail := func(err error, detail string) error { return fmt.Errorf("writing %s: %s: %w", dir, detail, err) }
	staged, err := harness.Stage(dir, "pull", files, fail)
	if err != nil {
		return nil, err
	}
	if err := staged.Commit(fail); err != nil {
		return nil, err
	}
	return names, nil
}

// checkPullOutput refuses an output folder oa pull may not replace: a
// link, a file, or a folder that is not empty and holds no pullMarker
// (as a regular file).
func checkPullOutput(dir string) error {
	refuse := func(why string) error {
		return blocking.New(blocking.PullOutputNotOwned, "%s", why).At("", "-o")
	}
	fi, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("checking the output folder: %w", err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return refuse("the output folder is a symbolic link")
	case !fi.IsDir():
		return refuse("the output is not a folder")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("reading the output folder: %w", err)
	}
	if len(entries) == 0 {
		return nil
	}
	if m, err := os.Lstat(filepath.Join(dir, pullMarker)); err == nil && m.Mode().IsRegular() {
		return nil
	}
	return refuse("the output folder is not empty and was not written by oa pull")
}
