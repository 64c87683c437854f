package compiler

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/oa-dev/oa/blocking"
)

// Limits on what Compile reads from a bundle folder. A bundle is method and
// prose, never data: real ones are a few KiB. The limits keep a hostile or
// mistaken folder from exhausting memory before any byte is believed.
const (
	// MaxBundleFileBytes bounds each .cue file and skill doc.
	MaxBundleFileBytes = 1 << 20
	// MaxBundleBytes bounds all of them together.
	MaxBundleBytes = 4 << 20
	// MaxBundleFiles bounds how many .cue files and skill docs there are.
	MaxBundleFiles = 256
)

// sourceFile is one file of the bundle, read.
type sourceFile struct {
	// rel is the file's path relative to the bundle folder, with slashes.
	rel string
	// path is the folder as the publisher named it joined with rel: what
	// refusals and CUE positions show.
	path string
	data []byte
}

// bundleFiles reads a bundle folder's .cue files and skills/*.md through an
// os.Root, so nothing outside the folder is ever opened: a symbolic link
// that leads out is refused (one that stays inside and names a regular file
// is followed), anything but a regular file is refused without reading it
// (a named pipe is never opened for a blocking read, a device never read),
// and every read is bounded by the limits above. Refusals are located at
// the file and collected in refused.
type bundleFiles struct {
	dir  string
	root *os.Root
	// real is the folder with every link resolved, to tell a link that
	// leaves it from one that does not.
	real    string
	total   int64
	count   int
	refused blocking.List
}

func openBundle(dir string) (*bundleFiles, error) {
	info, err := os.Stat(dir)
	if err != nil || !info.IsDir() {
		return nil, blocking.New(blocking.BundleUnreadable, "not a readable folder").At(dir, "")
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, blocking.New(blocking.BundleUnreadable, "not a readable folder").At(dir, "")
	}
	real, err := filepath.EvalSymlinks(dir)
	if err == nil {
		real, err = filepath.Abs(real)
	}
	if err != nil {
		root.Close()
		return nil, blocking.New(blocking.BundleUnreadable, "not a readable folder").At(dir, "")
	}
	return &bundleFiles{dir: dir, root: root, real: real}, nil
}

func (b *bundleFiles) Close() error { return b.root.Close() }

func (b *bundleFiles) refuse(code blocking.Code, rel, format string, args ...any) {
	b.refused = append(b.refused, blocking.New(code, format, args...).At(b.display(rel), ""))
}

func (b *bundleFiles) display(rel string) string {
	if rel == "." {
		return b.dir
	}
	return filepath.Join(b.dir, filepath.FromSlash(rel))
}

// list returns the names in folder (relative to the bundle, "." for the
// bundle itself) that match pattern, sorted. It reads the folder in batches
// and stops once more files match than a bundle may hold, so a folder of
// millions of entries costs time but no memory. A folder that does not
// exist lists nothing; one that is a link out of the bundle is refused.
func (b *bundleFiles) list(folder, pattern string) ([]string, error) {
	if b.count > MaxBundleFiles {
		return nil, nil // refused already
	}
	if folder != "." {
		info, err := b.root.Lstat(folder)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if err == nil && info.Mode()&fs.ModeSymlink != 0 && b.leaves(folder) {
			b.refuse(blocking.BundleLinkEscapes, folder, "rule: the folder is a link to a place outside the bundle")
			return nil, nil
		}
	}
	f, err := b.root.Open(folder)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		b.refuse(blocking.BundleUnreadable, folder, "the folder cannot be opened")
		return nil, nil
	}
	defer f.Close()
	if info, err := f.Stat(); err != nil || !info.IsDir() {
		return nil, nil // not a folder: it holds no files
	}
	var names []string
	for {
		entries, err := f.ReadDir(256)
		for _, e := range entries {
			if ok, _ := filepath.Match(pattern, e.Name()); !ok {
				continue
			}
			if b.count++; b.count > MaxBundleFiles {
				b.refuse(blocking.BundleTooLarge, ".", "rule: more than %d .cue files and skill docs", MaxBundleFiles)
				return nil, nil
			}
			names = append(names, joinRel(folder, e.Name()))
		}
		if errors.Is(err, io.EOF) || len(entries) == 0 {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("compiler: listing %s: %w", b.display(folder), err)
		}
	}
	sort.Strings(names)
	return names, nil
}

func joinRel(folder, name string) string {
	if folder == "." {
		return name
	}
	return folder + "/" + name
}

// readAll reads every file of rels, refusing those that cannot be believed.
func (b *bundleFiles) readAll(rels []string) []sourceFile {
	out := make([]sourceFile, 0, len(rels))
	for _, rel := range rels {
		if data, ok := b.read(rel); ok {
			out = append(out, sourceFile{rel: rel, path: b.display(rel), data: data})
		}
	}
	return out
}

// read returns the bytes of the regular file rel, or false after refusing it.
func (b *bundleFiles) read(rel string) ([]byte, bool) {
	if b.total > MaxBundleBytes {
		return nil, false // refused already: nothing more is read
	}
	info, err := b.root.Lstat(rel)
	if err != nil {
		b.refuse(blocking.BundleUnreadable, rel, "the file cannot be read")
		return nil, false
	}
	if info.Mode()&fs.ModeSymlink != 0 {
		if b.leaves(rel) {
			b.refuse(blocking.BundleLinkEscapes, rel, "rule: the link leads outside the bundle folder")
			return nil, false
		}
	} else if !info.Mode().IsRegular() {
		b.refuse(blocking.BundleFileNotRegular, rel, "rule: %s is not a regular file", kindOf(info.Mode()))
		return nil, false
	}
	// O_NONBLOCK: should the file have become a named pipe since Lstat,
	// opening it must not wait for a writer. The root refuses, at open
	// time, a link that has come to lead outside.
	f, err := b.root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if info.Mode()&fs.ModeSymlink != 0 {
			b.refuse(blocking.BundleFileNotRegular, rel, "rule: the link names nothing that can be opened inside the bundle")
		} else {
			b.refuse(blocking.BundleUnreadable, rel, "the file cannot be opened")
		}
		return nil, false
	}
	defer f.Close()
	return b.readOpened(f, rel)
}

// readOpened checks what f is (the opened file, not the name) and reads it
// within the limits.
func (b *bundleFiles) readOpened(f *os.File, rel string) ([]byte, bool) {
	info, err := f.Stat()
	if err != nil {
		b.refuse(blocking.BundleUnreadable, rel, "the file cannot be read")
		return nil, false
	}
	if !info.Mode().IsRegular() {
		b.refuse(blocking.BundleFileNotRegular, rel, "rule: what opens there is %s, not a regular file", kindOf(info.Mode()))
		return nil, false
	}
	if info.Size() > MaxBundleFileBytes {
		b.refuse(blocking.BundleFileTooLarge, rel, "rule: %d bytes, more than the %d a file may hold", info.Size(), MaxBundleFileBytes)
		return nil, false
	}
	if b.total+info.Size() > MaxBundleBytes {
		b.total += info.Size()
		b.refuse(blocking.BundleTooLarge, rel, "rule: the bundle's files hold more than %d bytes together", MaxBundleBytes)
		return nil, false
	}
	// The sizes are checked again on what is read: the file may grow.
	data, err := io.ReadAll(io.LimitReader(f, MaxBundleFileBytes+1))
	if err != nil {
		b.refuse(blocking.BundleUnreadable, rel, "the file cannot be read")
		return nil, false
	}
	if len(data) > MaxBundleFileBytes {
		b.refuse(blocking.BundleFileTooLarge, rel, "rule: more than the %d bytes a file may hold", MaxBundleFileBytes)
		return nil, false
	}
	if b.total += int64(len(data)); b.total > MaxBundleBytes {
		b.refuse(blocking.BundleTooLarge, rel, "rule: the bundle's files hold more than %d bytes together", MaxBundleBytes)
		return nil, false
	}
	return data, true
}

// leaves reports whether the link at rel resolves to a place outside the
// bundle folder, or to nothing at all (a link whose target cannot be
// resolved cannot be shown to stay inside).
func (b *bundleFiles) leaves(rel string) bool {
	target, err := filepath.EvalSymlinks(filepath.Join(b.dir, filepath.FromSlash(rel)))
	if err != nil {
		return false // broken: refused as not a regular file when opened
	}
	if target, err = filepath.Abs(target); err != nil {
		return true
	}
	inside, err := filepath.Rel(b.real, target)
	return err != nil || inside == ".." || strings.HasPrefix(inside, ".."+string(filepath.Separator))
}

// kindOf names the kind of a file that is not regular.
func kindOf(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeDevice != 0 || m&fs.ModeCharDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a folder"
	default:
		return "not a file"
	}
}
