package resolve

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/internal/atomicfile"
)

// SignRegistryFile checks the registry file at path, signs it as reviewed
// by by on host h and installs it as the host's registry file (under
// h.Home) atomically, unless path is that file already. What is signed
// and installed are the bytes that were checked: a file that changes
// while it is read refuses registry_unreadable and changes nothing.
func SignRegistryFile(ctx context.Context, h *host.Host, path, by string, now time.Time) (*Registry, *RegistrySignature, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, blocking.New(blocking.RegistryUnreadable, "the file cannot be read").At(path, "")
	}
	r, err := LoadRegistry(path)
	if err != nil {
		return nil, nil, err
	}
	if again, err := os.ReadFile(path); err != nil || !bytes.Equal(again, src) {
		return nil, nil, blocking.New(blocking.RegistryUnreadable, "the file changed while it was being read").At(path, "")
	}
	sig, err := SignRegistry(ctx, h, r, by, now)
	if err != nil {
		return nil, nil, err
	}
	dst := filepath.Join(h.Home, RegistryFile)
	abs, _ := filepath.Abs(path)
	if absDst, _ := filepath.Abs(dst); abs == absDst {
		return r, sig, nil
	}
	return r, sig, atomicfile.Write(dst, src, 0o644)
}
