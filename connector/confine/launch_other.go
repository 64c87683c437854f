//go:build !linux

package confine

// ExitLauncherFailed is the exit status of a launcher that could not
// confine itself. Off Linux there is no launcher: Require refuses first.
const ExitLauncherFailed = 126
