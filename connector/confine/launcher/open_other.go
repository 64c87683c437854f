//go:build !linux

package launcher

import "errors"

// OpenNoSymlinks is Linux's (openat2): elsewhere there is no confinement.
func OpenNoSymlinks(path string) (int, error) {
	return -1, errors.ErrUnsupported
}
