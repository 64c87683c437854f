package resolve

import (
	"bytes"
	"crypto/sha256"
	"os"
	"sync"

	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/projection"
)

// The coordinator recomputes the plan before every effect. Loading the
// registry (a CUE evaluation) and projecting the package (a scan of every
// projected file) cost milliseconds each time, but both are pure functions
// of bytes that are cheap to compare, so LoadFor remembers their results
// keyed by those bytes. Nothing is skipped that could see a change: the
// registry file is read and hashed on every load, the Worker is hashed and
// compared with its workerIrDigest on every load, and every check that
// follows (the registry signature, the connections, all nine proofs) runs
// in full. Only successes are remembered.

// maxCached bounds each cache; past it, the cache starts again empty.
const maxCached = 16

type cachedRegistry struct {
	sum [sha256.Size]byte
	reg *Registry
}

var registryCache struct {
	sync.Mutex
	byPath map[string]cachedRegistry
}

// loadRegistry is LoadRegistry(path), remembered by the sha256 of the
// file's exact bytes. A registry is cached only when the file held the
// same bytes before and after it was loaded, so it is the registry of
// those bytes. The result is shared and must not be changed.
func loadRegistry(path string) (*Registry, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return LoadRegistry(path) // refused as unreadable, located
	}
	sum := sha256.Sum256(src)
	registryCache.Lock()
	c, ok := registryCache.byPath[path]
	registryCache.Unlock()
	if ok && c.sum == sum {
		return c.reg, nil
	}
	reg, err := LoadRegistry(path)
	if err != nil {
		return nil, err
	}
	if after, err := os.ReadFile(path); err != nil || !bytes.Equal(after, src) {
		return reg, nil // changed while loading: use it, remember nothing
	}
	registryCache.Lock()
	if registryCache.byPath == nil || len(registryCache.byPath) >= maxCached {
		registryCache.byPath = map[string]cachedRegistry{}
	}
	registryCache.byPath[path] = cachedRegistry{sum, reg}
	registryCache.Unlock()
	return reg, nil
}

type projectionKey struct{ artifactDigest, workerIRDigest string }

var projectionCache struct {
	sync.Mutex
	byRelease map[projectionKey]*projection.Projection
}

// project is projection.Project(w, artifactDigest, workerIRDigest),
// remembered by the two release digests. w is hashed on every call: a
// remembered projection is returned only for a Worker whose canonical
// bytes are exactly those of workerIRDigest, and Project reads nothing
// else of w. The result is shared and must not be changed.
func project(w *ir.Worker, artifactDigest, workerIRDigest string) (*projection.Projection, error) {
	k := projectionKey{artifactDigest, workerIRDigest}
	projectionCache.Lock()
	p, ok := projectionCache.byRelease[k]
	projectionCache.Unlock()
	if ok && w != nil {
		if d, err := w.Digest(); err == nil && d == workerIRDigest {
			return p, nil
		}
	}
	p, err := projection.Project(w, artifactDigest, workerIRDigest)
	if err != nil {
		return nil, err
	}
	projectionCache.Lock()
	if projectionCache.byRelease == nil || len(projectionCache.byRelease) >= maxCached {
		projectionCache.byRelease = map[projectionKey]*projection.Projection{}
	}
	projectionCache.byRelease[k] = p
	projectionCache.Unlock()
	return p, nil
}
