package atomicfile

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
)

// Staged is a folder of files written beside the folder it will replace,
// so that the replaced folder never holds half of them.
type Staged struct {
	tmp, dir string
}

// Stage writes files (slash-separated paths relative to the folder) into
// a new temporary folder next to dir. fail maps a failure to create the
// parent or the temporary folder to the caller's own refusal, given what
// could not be done.
func Stage(dir, purpose string, files map[string][]byte, fail func(err error, detail string) error) (*Staged, error) {
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fail(err, "the folder's parent cannot be created")
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+"."+purpose+"-")
	if err != nil {
		return nil, fail(err, "the folder's parent is not writable")
	}
	s := &Staged{tmp: tmp, dir: dir}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		path := filepath.Join(tmp, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			s.Discard()
			return nil, err
		}
		if err := os.WriteFile(path, files[name], 0o644); err != nil {
			s.Discard()
			return nil, err
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		s.Discard()
		return nil, err
	}
	return s, nil
}

// Discard removes the staged folder.
func (s *Staged) Discard() { os.RemoveAll(s.tmp) }

// Commit renames the staged folder into place. An existing folder is moved
// aside first (fail maps that failure to the caller's refusal) and removed
// once the new one is in place, or moved back if that fails. After an
// error the staged folder is discarded.
func (s *Staged) Commit(fail func(err error, detail string) error) error {
	if _, err := os.Lstat(s.dir); err == nil {
		old := s.tmp + ".old"
		if err := os.Rename(s.dir, old); err != nil {
			s.Discard()
			return fail(err, "the earlier folder cannot be moved aside")
		}
		if err := os.Rename(s.tmp, s.dir); err != nil {
			_ = os.Rename(old, s.dir)
			s.Discard()
			return err
		}
		return os.RemoveAll(old)
	}
	if err := os.Rename(s.tmp, s.dir); err != nil {
		s.Discard()
		return err
	}
	return nil
}
