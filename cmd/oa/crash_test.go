package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// crashModeEnv makes the test binary, run as a child, crash as oa's main
// would after crashBySignal: "panic" panics in another goroutine, "oom"
// runs out of memory under an address-space limit.
const crashModeEnv = "OA_TEST_CRASH_MODE"

// crashChild is the child's side; it never returns.
func crashChild(mode string) {
	crashBySignal()
	switch mode {
	case "panic":
		go func() { panic("a crash in another goroutine") }()
	case "oom":
		limit := vmSize() + 512<<20
		if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: limit, Max: limit}); err != nil {
			fmt.Fprintln(os.Stderr, "setrlimit:", err)
			os.Exit(3)
		}
		var kept [][]byte
		for range 1024 {
			b := make([]byte, 64<<20)
			for i := 0; i < len(b); i += 4096 {
				b[i] = 1
			}
			kept = append(kept, b)
		}
		fmt.Fprintln(os.Stderr, "allocated", len(kept), "chunks without failing")
		os.Exit(3)
	}
	time.Sleep(time.Minute)
	os.Exit(3)
}

// vmSize is this process's virtual size in bytes (/proc/self/status).
func vmSize() uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 1 << 30
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmSize:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 1 << 30
}

// wantKilledByAbort fails t unless err says the process was killed by
// SIGABRT, which no refusal (exit 2) or fault (exit 1) can be mistaken for.
func wantKilledByAbort(t *testing.T, err error, stderr string) {
	t.Helper()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("the process did not fail: %v\n%s", err, stderr)
	}
	ws := ee.Sys().(syscall.WaitStatus)
	if ws.Exited() {
		t.Fatalf("the crash exited with status %d, want killed by SIGABRT\n%s", ws.ExitStatus(), stderr)
	}
	if !ws.Signaled() || ws.Signal() != syscall.SIGABRT {
		t.Fatalf("killed by %v, want SIGABRT\n%s", ws.Signal(), stderr)
	}
	if ws.CoreDump() {
		t.Fatal("the crash wrote a core file")
	}
}

// TestACrashIsASignalNotARefusal: a panic in another goroutine and a
// runtime out of memory (a real allocation failure under RLIMIT_AS) end
// the process by SIGABRT, not with exit status 2.
func TestACrashIsASignalNotARefusal(t *testing.T) {
	for _, mode := range []string{"panic", "oom"} {
		t.Run(mode, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), crashModeEnv+"="+mode)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			wantKilledByAbort(t, err, stderr.String())
			want := map[string]string{"panic": "a crash in another goroutine", "oom": "out of memory"}[mode]
			if !strings.Contains(stderr.String(), want) {
				t.Fatalf("stderr does not say %q:\n%.2000s", want, stderr.String())
			}
		})
	}
}

// TestOaCrashIsASignal: the oa binary itself, stopped mid-request by
// SIGQUIT (which the runtime handles like a crash: stacks, then exit 2
// by default), is killed by SIGABRT.
func TestOaCrashIsASignal(t *testing.T) {
	host := silentHost(t)
	accepted := host.accepted
	cmd := exec.Command(oaBinary(t), "pull", "--plain-http", "--request-timeout", "10m",
		host.addr+"/oa/x@sha256:"+strings.Repeat("a", 64))
	cmd.Env = append(os.Environ(), "OA_HOME="+t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killAtEnd(t, cmd.Process.Pid)
	select {
	case <-accepted: // oa is in main, waiting for the registry
	case <-time.After(2 * time.Minute):
		t.Fatal("oa never connected to the registry")
	}
	if err := cmd.Process.Signal(syscall.SIGQUIT); err != nil {
		t.Fatal(err)
	}
	wantKilledByAbort(t, cmd.Wait(), stderr.String())
}
