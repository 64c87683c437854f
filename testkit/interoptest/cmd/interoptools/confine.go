package main

import (
	"fmt"
	"os"
	"os/exec"

	"github.com/oa-dev/oa/testkit/interoptest"
)

// fillConfineServers installs the pinned stock MCP servers of the
// confinement tests (interoptest.ConfineServers), and reports whether it
// failed. Without npm they are left out, with a warning, and their test
// skips.
func fillConfineServers() bool {
	if _, err := exec.LookPath("npm"); err != nil {
		fmt.Fprintln(os.Stderr, "warning: npm is not installed: the confinement tests' MCP servers are not installed and their test will skip")
		return false
	}
	s, err := interoptest.EnsureConfineServers()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", interoptest.ConfineServersName, err)
		return true
	}
	fmt.Fprintf(os.Stderr, "%-10s %s\n", interoptest.ConfineServersName, s.NodeModules)
	return false
}
