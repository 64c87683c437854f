package demo_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/demo"
)

func TestPrepareServesTheDemo(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	var progress bytes.Buffer
	setup, err := demo.Prepare(ctx, home, &progress)
	if err != nil {
		t.Fatal(err)
	}
	if setup.Binding.Deployment != demo.Deployment || !strings.Contains(progress.String(), "bound to deployment clinic") {
		t.Fatalf("setup %+v\n%s", setup.Binding, progress.String())
	}
	if _, err := demo.Prepare(ctx, home, &progress); err == nil {
		t.Fatal("prepared twice into one host")
	}
	c, err := coordinator.Open(ctx, coordinator.Options{Home: home, Deployment: demo.Deployment})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := c.Run(ctx, coordinator.RunRequest{Workflow: "append_triage_note", RequestID: "demo-1", Wait: 30 * time.Second,
		Inputs: json.RawMessage(`{"record_ref":"AB-1234","urgency":"routine","summary":"Checked in."}`)})
	if err != nil || res.Outcome != contract.OutcomeDone {
		t.Fatalf("demo run: %+v, %v", res, err)
	}
}

// TestHelperEnsure is not a test: it is the child process of
// TestConcurrentFirstStartPreparesOnce, one sandbox coordinator's start.
func TestHelperEnsure(t *testing.T) {
	home := os.Getenv("OA_TEST_DEMO_HOME")
	if home == "" {
		t.Skip("only runs as the child of TestConcurrentFirstStartPreparesOnce")
	}
	prepared, err := demo.Ensure(context.Background(), home, io.Discard)
	if err != nil {
		fmt.Println("ensure failed:", err)
		os.Exit(1)
	}
	fmt.Println("prepared:", prepared)
}

// TestConcurrentFirstStartPreparesOnce (D13): two processes starting
// together on a new home both get a ready demo host; one prepares it.
func TestConcurrentFirstStartPreparesOnce(t *testing.T) {
	home := filepath.Join(t.TempDir(), "oa", "demo")
	var cmds [2]*exec.Cmd
	var outs [2]bytes.Buffer
	for i := range cmds {
		cmds[i] = exec.Command(os.Args[0], "-test.run", "^TestHelperEnsure$")
		cmds[i].Env = append(os.Environ(), "OA_TEST_DEMO_HOME="+home)
		cmds[i].Stdout, cmds[i].Stderr = &outs[i], &outs[i]
		if err := cmds[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	prepared := 0
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("start %d: %v\n%s", i, err, outs[i].String())
		}
		if strings.Contains(outs[i].String(), "prepared: true") {
			prepared++
		}
	}
	if prepared != 1 || !demo.Ready(home) {
		t.Fatalf("%d starts prepared the demo, want 1\n%s\n%s", prepared, outs[0].String(), outs[1].String())
	}
}
