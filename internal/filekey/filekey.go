// Package filekey tells whether a file changed since it was last seen,
// from what stat says of it, so a reader can keep what it made of the
// file (a parse, a digest) until then.
package filekey

import (
	"os"
	"syscall"
	"time"
)

// Key is what stat says of a regular file: its device and inode (a file
// renamed into place is another), size, and modification and change
// times (the change time moves on every write and cannot be set back).
type Key struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64
}

// Of is the key of the regular file at path; ok is false when there is
// none (missing, not regular, or no stat of this kind).
func Of(path string) (k Key, ok bool) {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return Key{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return Key{}, false
	}
	return Key{dev: uint64(st.Dev), ino: st.Ino, size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}, true
}

// ChangedWithin reports whether the file was written (or its times set)
// less than d before now. Two writes within one tick of the kernel's file
// clock (milliseconds) can leave the same key, so a reader that must see
// every change keeps nothing for a file this recent.
func (k Key) ChangedWithin(d time.Duration) bool {
	return time.Since(time.Unix(0, max(k.mtime, k.ctime))) < d
}
