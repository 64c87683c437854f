package bind

import (
	"crypto/sha256"
	"sync"
	"time"

	"github.com/oa-dev/oa/internal/boundedfile"
	"github.com/oa-dev/oa/internal/filekey"
	"github.com/oa-dev/oa/schemas"
)

// fileDigests gives the sha256 of a file's bytes, reading the file again
// only when what stat says of it changed (filekey) — unless it was
// changed within settle of being read, where two writes can share one
// timestamp: such a file is read again on every call until it has been
// still for settle.
type fileDigests struct {
	mu    sync.Mutex
	known map[string]fileSeen
}

// settle is how long a file must have been unchanged for its digest to
// be kept.
const settle = 2 * time.Second

// fileSeen is a file's key as stat saw it before it was read, and the
// digest of what was read.
type fileSeen struct {
	key    filekey.Key
	digest [sha256.Size]byte
}

// digest returns the sha256 of the file at path, or ok false when it
// cannot be read.
func (f *fileDigests) digest(path string) (sum [sha256.Size]byte, ok bool) {
	key, statable := filekey.Of(path)
	if statable {
		f.mu.Lock()
		known, hit := f.known[path]
		f.mu.Unlock()
		if hit && known.key == key {
			return known.digest, true
		}
	}
	// Read as the file is loaded (schemas.LoadConfig, boundedfile.ReadRegular): bounded, regular
	// files only, never waiting on a pipe.
	src, err := boundedfile.ReadRegular(path, schemas.MaxConfigFileBytes)
	if err != nil {
		return sha256.Sum256(nil), false
	}
	sum = sha256.Sum256(src)
	// Kept only when stat saw the file (before the read) still for
	// settle: a write after the stat changes what stat says next time.
	if statable && !key.ChangedWithin(settle) {
		f.mu.Lock()
		if f.known == nil {
			f.known = map[string]fileSeen{}
		}
		f.known[path] = fileSeen{key, sum}
		f.mu.Unlock()
	}
	return sum, true
}
