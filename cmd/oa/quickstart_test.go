package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestQuickstartCommand runs `oa quickstart` as a user would: a built oa,
// a fresh folder, nothing else. Every sandbox case must give its outcome
// through a real MCP session with a subprocess coordinator, and the
// receipt chain must hold.
func TestQuickstartCommand(t *testing.T) {
	bin := oaBinary(t)
	dir := filepath.Join(t.TempDir(), "qs")
	cmd := exec.Command(bin, "quickstart", dir, "--json")
	cmd.Env = append(os.Environ(), "OA_HOME="+t.TempDir())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("quickstart: %v\n%s", err, out)
	}
	var got struct {
		Reference string `json:"reference"`
		Cases     []struct {
			Record, Want, Outcome, Reason string
		} `json:"cases"`
		Receipts struct {
			Receipts int  `json:"receipts"`
			OK       bool `json:"ok"`
		} `json:"receipts"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("quickstart --json: %v\n%s", err, out)
	}
	outcomes := map[string]bool{}
	for _, c := range got.Cases {
		if c.Outcome != c.Want {
			t.Fatalf("%s gave %s (%s), want %s", c.Record, c.Outcome, c.Reason, c.Want)
		}
		outcomes[c.Outcome] = true
	}
	if len(outcomes) != 4 || !got.Receipts.OK || got.Receipts.Receipts != len(got.Cases) || !strings.HasPrefix(got.Reference, "clinic-triage@sha256:") {
		t.Fatalf("quickstart: %+v", got)
	}
	// The folder now holds a working host a person can keep using.
	st := exec.Command(bin, "bind", "inspect", "clinic")
	st.Env = append(os.Environ(), "OA_HOME="+dir)
	if b, err := st.CombinedOutput(); err != nil || !strings.Contains(string(b), "approved") {
		t.Fatalf("bind inspect in the quickstart host: %v\n%s", err, b)
	}
	// A host folder is never overwritten.
	again := exec.Command(bin, "quickstart", dir)
	if b, err := again.CombinedOutput(); again.ProcessState.ExitCode() != 2 || !strings.Contains(string(b), "host_exists") {
		t.Fatalf("quickstart into a folder that holds a host: %v\n%s", err, b)
	}
}
