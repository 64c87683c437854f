package pipeline

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/internal/atomicfile"
	"github.com/oa-dev/oa/oci"
)

// PullMarker is the file Pull leaves in its output folder, so that a
// later pull knows the folder is its own to replace.
const PullMarker = ".oa-pull"

// Pull writes each layer of a fetched (verified) artifact under its title
// into a new folder staged beside dir, then renames it into place
// (projection.Stage): nothing is ever written through a link already in dir.
// dir must be missing, empty, or a folder an earlier pull wrote (it holds
// PullMarker); anything else refuses pull_output_not_owned and changes
// nothing. It returns the names written, in layer order.
func Pull(dir string, art *oci.Artifact) ([]string, error) {
	if err := CheckPullDir(dir); err != nil {
		return nil, err
	}
	files := map[string][]byte{PullMarker: []byte(art.Descriptor.Digest.String() + "\n")}
	var names []string
	for _, l := range art.Layers {
		title := l.Descriptor.Annotations["org.opencontainers.image.title"]
		clean := path.Clean(title)
		if title == "" || clean != title || path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") || clean == PullMarker {
			return nil, fmt.Errorf("layer %s has an unsafe title", l.Descriptor.Digest)
		}
		files[clean] = l.Data
		names = append(names, clean)
	}
	fail := func(err error, detail string) error { return fmt.Errorf("writing %s: %s: %w", dir, detail, err) }
	staged, err := atomicfile.Stage(dir, "pull", files, fail)
	if err != nil {
		return nil, err
	}
	if err := staged.Commit(fail); err != nil {
		return nil, err
	}
	return names, nil
}

// CheckPullDir refuses an output folder Pull may not replace: a link, a
// file, or a folder that is not empty and holds no PullMarker (as a
// regular file). Callers check before reading anything, so a refused
// folder costs no download.
func CheckPullDir(dir string) error {
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
	if m, err := os.Lstat(filepath.Join(dir, PullMarker)); err == nil && m.Mode().IsRegular() {
		return nil
	}
	return refuse("the output folder is not empty and was not written by oa pull")
}
