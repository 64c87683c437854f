package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

var (
	oaOnce sync.Once
	oaBin  string
	oaErr  error
	oaDir  string
)

// TestMain removes the oa binary the tests built, once they are done,
// and installs oa as the testscript command "oa" (script_test.go): the
// test binary, run under that name, is oa.
func TestMain(m *testing.M) {
	if mode := os.Getenv(crashModeEnv); mode != "" {
		crashChild(mode) // a crash test's child: never returns
	}
	testscript.Main(removingBinary{m}, map[string]func(){"oa": scriptOA})
}

// removingBinary runs the tests, then removes the oa binary they built.
type removingBinary struct{ m *testing.M }

func (r removingBinary) Run() int {
	code := r.m.Run()
	if oaDir != "" {
		os.RemoveAll(oaDir)
	}
	return code
}

// oaBinary builds oa from this package once per test binary and returns
// its path: the tests that run oa as a process (quickstart, coordinator
// serve, the MCP Inspector, benchmarks) share it.
func oaBinary(t testing.TB) string {
	t.Helper()
	oaOnce.Do(func() {
		if oaDir, oaErr = os.MkdirTemp("", "oa-test-bin-"); oaErr != nil {
			return
		}
		oaBin = filepath.Join(oaDir, "oa")
		if out, err := exec.Command("go", "build", "-o", oaBin, ".").CombinedOutput(); err != nil {
			oaErr = fmt.Errorf("building oa: %v\n%s", err, out)
		}
	})
	if oaErr != nil {
		t.Fatal(oaErr)
	}
	return oaBin
}
