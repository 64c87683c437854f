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
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".writing-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	// After a successful rename nothing is left at tmp; before it, this
	// removes the half-written file.
	defer os.Remove(tmp)
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(dir)
}

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
