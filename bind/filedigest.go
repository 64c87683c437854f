package bind

import (
	"crypto/sha256"
	"os"
	"sync"
	"syscall"
	"time"
)

// fileDigests gives the sha256 of a file's bytes, reading the file again
// only when what stat says of it changed: its device and inode (a file
// renamed into place), size, modification and change times. The change
// time moves on every write, so an edited file is read again — unless it
// was changed within settle of being read, where two writes can share one
// timestamp (the kernel's clock for them ticks in milliseconds): such a
// file is read again on every call until it has been still for settle.
type fileDigests struct {
	mu    sync.Mutex
	known map[string]fileSeen
}

// settle is how long a file must have been unchanged for its digest to
// be kept.
const settle = 2 * time.Second

// fileSeen is a file as stat saw it before it was read, and the digest
// of what was read.
type fileSeen struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64
	digest       [sha256.Size]byte
}

// digest returns the sha256 of the file at path, or ok false when it
// cannot be read.
func (f *fileDigests) digest(path string) (sum [sha256.Size]byte, ok bool) {
	seen, statable := statOf(path)
	if statable {
		f.mu.Lock()
		known, hit := f.known[path]
		f.mu.Unlock()
		if hit && known.same(seen) {
			return known.digest, true
		}
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return sha256.Sum256(nil), false
	}
	sum = sha256.Sum256(src)
	// Kept only when stat saw the file (before the read) still for
	// settle: a write after the stat changes what stat says next time.
	if statable && time.Since(time.Unix(0, max(seen.mtime, seen.ctime))) > settle {
		seen.digest = sum
		f.mu.Lock()
		if f.known == nil {
			f.known = map[string]fileSeen{}
		}
		f.known[path] = seen
		f.mu.Unlock()
	}
	return sum, true
}

// same reports whether s and t saw the same file unchanged.
func (s fileSeen) same(t fileSeen) bool {
	return s.dev == t.dev && s.ino == t.ino && s.size == t.size && s.mtime == t.mtime && s.ctime == t.ctime
}

// statOf is what stat says of the file at path.
func statOf(path string) (fileSeen, bool) {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return fileSeen{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileSeen{}, false
	}
	return fileSeen{dev: uint64(st.Dev), ino: st.Ino, size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}, true
}
