package main

import (
	"fmt"
	"os"
	"os/exec"

	"github.com/oa-dev/oa/testkit/interoptest"
)

// fillClients installs the pinned real MCP clients (Gemini CLI, Codex,
// Claude Code) that read what oa harness install wrote, each npm ci
// bounded by interoptest.ClientInstallTimeout, and reports whether one
// failed. Without npm they are left out, with a warning, and their test
// skips; with -env it prints their OA_CLIENT_… lines.
func fillClients(env bool) bool {
	if _, err := exec.LookPath("npm"); err != nil {
		fmt.Fprintln(os.Stderr, "warning: npm is not installed: the real MCP clients are not installed and their test will skip")
		return false
	}
	failed := false
	for _, c := range interoptest.ClientNames {
		p := os.Getenv(interoptest.ClientEnv(c))
		if p == "" {
			var err error
			if p, err = interoptest.EnsureClient(c); err != nil {
				fmt.Fprintf(os.Stderr, "%s: %v\n", c, err)
				failed = true
				continue
			}
		}
		if env {
			fmt.Printf("export %s=%s\n", interoptest.ClientEnv(c), p)
		} else {
			fmt.Printf("%-10s %s\n", c, p)
		}
	}
	return failed
}
