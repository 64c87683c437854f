//go:build !linux

package confine

// kernelABI is 0: Landlock is Linux's.
func kernelABI() int { return 0 }
