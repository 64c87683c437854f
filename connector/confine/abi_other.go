//go:build !linux

package confine

// kernelABI is 0: Landlock is Linux's.
func kernelABI() int { return 0 }

// SeccompSupported is false: seccomp is Linux's.
func SeccompSupported() bool { return false }
