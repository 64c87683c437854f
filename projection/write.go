package projection

import (
	"errors"
	"fmt"
	"github.com/oa-dev/oa/internal/atomicfile"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/internal/canonical"
)

// Write writes Files under dir. dir may be missing (it is created 0755,
// with its parents), empty, or the folder of an earlier projection of the
// same package holding nothing but that projection's files, which is
// replaced whole. Anything else is refused with projection_out_invalid and
// nothing is written. The files are written into a new folder next to dir
// and renamed into place, so dir never holds half a projection.
func (p *Projection) Write(dir string) error {
	if len(p.files) == 0 {
		return fmt.Errorf("harness: the projection has no files (not made by Project)")
	}
	dir = filepath.Clean(dir)
	replace, err := p.checkOut(dir)
	if err != nil {
		return err
	}
	staged, err := atomicfile.Stage(dir, "projecting", p.files, outInvalid)
	if err != nil {
		return err
	}
	if replace == outEmpty {
		if err := os.Remove(dir); err != nil {
			staged.Discard()
			return outInvalid(err, "the empty output folder cannot be replaced")
		}
	}
	return staged.Commit(outInvalid)
}

// outState is what is at the output path.
type outState int

const (
	outMissing outState = iota
	outEmpty
	outPrevious
)

// checkOut says what dir holds, refusing what may not be replaced.
func (p *Projection) checkOut(dir string) (outState, error) {
	fi, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return outMissing, nil
	case err != nil:
		return 0, outInvalid(err, "the output path cannot be read")
	case fi.Mode()&fs.ModeSymlink != 0:
		return 0, blocking.New(blocking.ProjectionOutInvalid, "the output path is a symbolic link")
	case !fi.IsDir():
		return 0, blocking.New(blocking.ProjectionOutInvalid, "the output path is not a folder")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, outInvalid(err, "the output folder cannot be read")
	}
	if len(entries) == 0 {
		return outEmpty, nil
	}
	m, err := ReadManifest(dir)
	if err != nil || m.Package != p.Package {
		return 0, blocking.New(blocking.ProjectionOutInvalid, "the output folder is not empty and holds no projection of this package")
	}
	want := slices.Sorted(maps.Keys(m.Files))
	want = append(want, ManifestFile)
	slices.Sort(want)
	have, err := regularFiles(dir)
	if err != nil || !slices.Equal(have, want) {
		return 0, blocking.New(blocking.ProjectionOutInvalid, "the output folder holds files that are not its projection's")
	}
	return outPrevious, nil
}

// ReadManifest reads and strictly decodes dir's projection.json.
func ReadManifest(dir string) (*Manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := canonical.DecodeStrict(b, &m); err != nil {
		return nil, err
	}
	if m.Type != ManifestType {
		return nil, errors.New("not a projection manifest")
	}
	return &m, nil
}

// regularFiles lists the slash-separated paths of dir's files, sorted;
// anything but folders and regular files is an error.
func regularFiles(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return nil
		case !d.Type().IsRegular():
			return errors.New("not a regular file")
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	slices.Sort(out)
	return out, err
}

// outInvalid is projection_out_invalid for a permission problem, and the
// error itself otherwise (a fault). The detail never names the path.
func outInvalid(err error, detail string) error {
	if errors.Is(err, fs.ErrPermission) || errors.Is(err, fs.ErrExist) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return blocking.New(blocking.ProjectionOutInvalid, "%s", detail)
	}
	return fmt.Errorf("%s: %w", detail, err)
}
