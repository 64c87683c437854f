// Command interoptools fills the interop tool cache that interoptest.Tool
// and interoptest.Inspector read: it builds every pinned stock CLI (cosign
// v2 and v3, oras, cue, torchwood's litewitness and witnessctl) and installs the pinned MCP Inspector
// and the real MCP clients (Claude Code, Gemini CLI, Codex) with npm ci,
// each only when the cache does not hold it yet, and prints where each is.
// Run it from the repository: go run ./interoptest/cmd/interoptools
// (.ci/run does, before go test ./...). With -env it prints the
// OA_COSIGN=… lines to export instead. Without npm the Inspector is left
// out (its test then skips), with a warning.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/oa-dev/oa/testkit/interoptest"
)

// npmTools are the tools installed with npm ci rather than built.
var npmTools = map[string]func() (string, error){
	interoptest.InspectorName:  interoptest.EnsureInspector,
	interoptest.EverythingName: interoptest.EnsureEverything,
}

func main() {
	env := flag.Bool("env", false, "print export OA_NAME=PATH lines")
	flag.Parse()
	if dir, err := interoptest.CacheDir(); err == nil {
		fmt.Fprintf(os.Stderr, "interop tool cache: %s\n", dir)
	}
	failed := false
	for _, name := range interoptest.Names() {
		var path string
		var err error
		if ensure, ok := npmTools[name]; ok {
			envName := "OA_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
			if _, lerr := exec.LookPath("npm"); lerr != nil && os.Getenv(envName) == "" {
				fmt.Fprintf(os.Stderr, "warning: npm is not installed: %s is not installed and its tests will skip\n", name)
				continue
			}
			if path = os.Getenv(envName); path == "" {
				path, err = ensure()
			}
		} else {
			path, err = interoptest.Ensure(name)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
			failed = true
			continue
		}
		if *env {
			fmt.Printf("export OA_%s=%s\n", strings.ToUpper(strings.ReplaceAll(name, "-", "_")), path)
		} else {
			fmt.Printf("%-10s %s\n", name, path)
		}
	}
	failed = fillConfineServers() || failed
	failed = fillClients(*env) || failed
	if failed {
		os.Exit(1)
	}
}
