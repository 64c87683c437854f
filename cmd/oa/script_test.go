package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// exitFileEnv names the file the script command oa writes its exit
// status to, for the script command status to check.
const exitFileEnv = "OA_TEST_EXIT_FILE"

// scriptOA is oa as a testscript command: it runs the CLI and keeps its
// exit status for status.
func scriptOA() {
	code := run(os.Args[1:], os.Stdout, os.Stderr)
	if f := os.Getenv(exitFileEnv); f != "" {
		_ = os.WriteFile(f, []byte(strconv.Itoa(code)), 0o600)
	}
	os.Exit(code)
}

// TestScripts runs testdata/script/*.txtar, the CLI's behaviour end to
// end: one script per command group (publish, host, run, fleet, audit)
// and one for usage errors and exit statuses. Each runs with its own
// $OA_HOME; `status N` checks the exit status of the oa just run (0
// success, 2 refused or a usage error, 1 a fault).
func TestScripts(t *testing.T) {
	t.Parallel()
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "script"),
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("OA_HOME", filepath.Join(env.WorkDir, "home"))
			env.Setenv(exitFileEnv, filepath.Join(env.WorkDir, ".oa-exit"))
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){"status": cmdStatus},
	})
}

// cmdStatus is the script command `status N`: the oa run last exited
// with status N. The status is read once, so a later check never sees
// an earlier run's.
func cmdStatus(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: status N")
	}
	file := ts.Getenv(exitFileEnv)
	b, err := os.ReadFile(file)
	if err != nil {
		ts.Fatalf("no exit status of oa to check: %v", err)
	}
	_ = os.Remove(file)
	if got := strings.TrimSpace(string(b)); got != args[0] {
		ts.Fatalf("oa exited with status %s, want %s", got, args[0])
	}
}
