// Package atomicfile replaces a file so that a reader sees the old bytes or
// the new, never half: the bytes go to a new temporary file in the same
// folder, which is synced, given its mode and renamed over the path, and
// the folder is synced so the rename survives a crash. On any failure the
// temporary file is removed and the old file is left as it was. A link
// already at the path is replaced, never written through.
//
// It is plumbing shared by every stage that keeps a file (client
// configurations, the capability registry, the sandbox state, the receipt
// key cache and checkpoint, compiled IR, audit bundles); it imports only
// the standard library.
//
// Stage and Commit do the same for a whole folder: written beside it,
// renamed into place, the old one removed only after (projections, client
// installs, `oa pull`).
package atomicfile

import (
	"io"
	"os"
	"path/filepath"
)

// Write replaces path with data, mode perm. The parent folder must exist.
func Write(path string, data []byte, perm os.FileMode) error {
	return WriteFunc(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteFunc replaces path with what write writes, mode perm. When write
// fails, its error is returned and path is unchanged.
func WriteFunc(path string, perm os.FileMode, write func(io.Writer) error) error {
	p, err := prepare(path, perm, write)
	if err != nil {
		return err
	}
	if err := p.Replace(); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

// Prepared is a file's replacement written and synced beside it but not
// yet in its place (Prepare): Replace puts it there, Discard removes it.
type Prepared struct {
	tmp, path string
}

// Prepare writes data to a new temporary file beside path, mode perm, and
// syncs it, so that it can be renamed over path later — once what it
// describes is durable elsewhere, say — without a write or a sync of its
// own on that path.
func Prepare(path string, data []byte, perm os.FileMode) (*Prepared, error) {
	return prepare(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

func prepare(path string, perm os.FileMode, write func(io.Writer) error) (*Prepared, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".writing-*")
	if err != nil {
		return nil, err
	}
	p := &Prepared{tmp: f.Name(), path: path}
	err = write(f)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		p.Discard()
		return nil, err
	}
	return p, nil
}

// Replace renames the prepared file over its path. The folder is not
// synced: after a crash the path may hold its old bytes again (never part
// of either), so Replace is for a file that may fall behind what it
// copies, never for one that must not; Write and WriteFunc sync the
// folder. The prepared file is removed when the rename fails.
func (p *Prepared) Replace() error {
	if err := os.Rename(p.tmp, p.path); err != nil {
		p.Discard()
		return err
	}
	return nil
}

// Discard removes the prepared file, leaving path as it was.
func (p *Prepared) Discard() { os.Remove(p.tmp) }

// syncDir makes the folder's new entry durable. Some file systems refuse
// to sync a folder; the rename has happened, so that is not a failure.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return nil
	}
	defer d.Close()
	_ = d.Sync()
	return nil
}
