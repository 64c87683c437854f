package proc_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oa-dev/oa/connector/confine"
	"github.com/oa-dev/oa/connector/proc"
)

// TestServerEndsItsWholeTree: a program started through a Server (here
// unconfined, a shell whose child leaves its session with setsid) is ended
// whole by End, in either ownership mode this host offers, and its cgroup
// is removed: the tree without the MCP session.
func TestServerEndsItsWholeTree(t *testing.T) {
	modes := map[string]string{"pids": proc.OwnershipPIDs}
	if proc.CgroupParent() != "" {
		modes["cgroup"] = ""
	}
	for name, ownership := range modes {
		t.Run(name, func(t *testing.T) {
			pidFile := filepath.Join(t.TempDir(), "pid")
			program := proc.Program{
				Command:     "/bin/sh",
				Args:        []string{"-c", "setsid sleep 100 & echo $! > " + pidFile + "; cat"},
				Confinement: &confine.Profile{Unconfined: true},
			}
			env, err := proc.Environment(program, os.LookupEnv)
			if err != nil {
				t.Fatal(err)
			}
			srv, err := proc.New(program, env, proc.Options{Ownership: ownership})
			if err != nil {
				t.Fatal(err)
			}
			conn, err := srv.Connect(context.Background())
			if err != nil || srv.Err() != nil {
				t.Fatalf("connect: %v, %v", err, srv.Err())
			}
			defer conn.Close()
			if (name == "cgroup") != (srv.Cgroup() != "") {
				t.Fatalf("mode %s, cgroup %q", name, srv.Cgroup())
			}
			detached := waitPID(t, pidFile)
			if err := srv.End(nil); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Kill(detached, 0); err == nil && !zombie(detached) {
				t.Errorf("the detached grandchild %d still runs", detached)
			}
			if cg := srv.Cgroup(); cg != "" {
				if _, err := os.Stat(cg); err == nil {
					t.Errorf("cgroup %s left behind", cg)
				}
			}
		})
	}
}

// waitPID reads the pid the program wrote to file.
func waitPID(t *testing.T, file string) int {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(file)
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
			return pid
		}
	}
	t.Fatal("the program wrote no pid")
	return 0
}

// zombie reports whether pid has ended but not been reaped.
func zombie(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return true
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && (f[0] == "Z" || f[0] == "X")
}

// ExampleEnvironment: a server gets PATH, HOME, the variables its
// connection names and its settings — nothing else of oa's environment.
func ExampleEnvironment() {
	oaEnv := map[string]string{"PATH": "/usr/bin", "HOME": "/home/op", "CRM_REGION": "eu", "AWS_SECRET_ACCESS_KEY": "never passed"}
	lookup := func(name string) (string, bool) { v, ok := oaEnv[name]; return v, ok }
	env, err := proc.Environment(proc.Program{Command: "crm-mcp", Env: []string{"CRM_REGION"}, Settings: map[string]string{"CRM_DB": "/srv/crm.db"}}, lookup)
	fmt.Println(env, err)
	// Output: [PATH=/usr/bin HOME=/home/op CRM_REGION=eu CRM_DB=/srv/crm.db] <nil>
}
