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
	t.Parallel() // a process of its own with its own OA_HOME
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
	if len(outcomes) != 4 {
		t.Errorf("quickstart: %d distinct outcomes, want 4: %v", len(outcomes), outcomes)
	}
	if !got.Receipts.OK {
		t.Errorf("quickstart: receipt chain ok = false, want true: %+v", got.Receipts)
	}
	if got.Receipts.Receipts != len(got.Cases) {
		t.Errorf("quickstart: %d receipts, want one a case (%d)", got.Receipts.Receipts, len(got.Cases))
	}
	if !strings.HasPrefix(got.Reference, "clinic-triage@sha256:") {
		t.Errorf("quickstart: reference = %q, want prefix clinic-triage@sha256:", got.Reference)
	}
	if t.Failed() {
		t.FailNow()
	}
	// The folder now holds a working host a person can keep using.
	st := exec.Command(bin, "bind", "inspect", "clinic")
	st.Env = append(os.Environ(), "OA_HOME="+dir)
	b, err := st.CombinedOutput()
	if err != nil {
		t.Fatalf("bind inspect in the quickstart host: %v\n%s", err, b)
	}
	wantHas(t, "bind inspect in the quickstart host", string(b), "approved")
	// A host folder is never overwritten, named by DIR or by OA_HOME.
	for _, again := range []*exec.Cmd{exec.Command(bin, "quickstart", dir), exec.Command(bin, "quickstart")} {
		again.Env = append(os.Environ(), "OA_HOME="+dir)
		b, _ := again.CombinedOutput()
		const what = "quickstart into a folder that holds a host"
		wantExit(t, what, again.ProcessState.ExitCode(), 2, string(b), "")
		wantHas(t, what, string(b), "host_exists")
		wantLacks(t, what, string(b), "quickstart host in")
	}
}

// TestQuickstartHonoursOAHome: without DIR, quickstart makes its host in
// $OA_HOME, labels the coordinator's operator lines about the sandbox
// failures as expected, and ends with the OA_HOME=… lines that continue
// with that host; an OA_HOME that is a file is refused as such.
func TestQuickstartHonoursOAHome(t *testing.T) {
	t.Parallel() // a process of its own with its own OA_HOME
	bin := oaBinary(t)
	home := filepath.Join(t.TempDir(), "my host")
	cmd := exec.Command(bin, "quickstart")
	// The oa on PATH is this one, so the closing lines say oa.
	cmd.Env = append(os.Environ(), "OA_HOME="+home, "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("quickstart: %v\n%s\n%s", err, out, stderr.String())
	}
	text := string(out)
	quoted := "OA_HOME='" + home + "'"
	for _, want := range []string{"quickstart host in " + home, quoted + " oa receipts verify", quoted + " oa attention list", quoted + " oa harness install --client claude-code --deployment clinic"} {
		if !strings.Contains(text, want) {
			t.Errorf("quickstart output lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "✗") {
		t.Errorf("a case failed:\n%s", text)
	}
	var sawTimeout, sawReady bool
	for _, line := range strings.Split(strings.TrimRight(stderr.String(), "\n"), "\n") {
		if !strings.HasPrefix(line, "  (expected, coordinator operator line) oa coordinator: ") {
			t.Errorf("operator line not labelled as expected: %q", line)
		}
		sawTimeout = sawTimeout || strings.Contains(line, "connector_timeout")
		sawReady = sawReady || strings.Contains(line, "ready: deployment clinic")
	}
	if !sawReady {
		t.Errorf("stderr lacks the ready line:\n%s", stderr.String())
	}
	if !sawTimeout {
		t.Errorf("stderr lacks the sandbox timeout (connector_timeout):\n%s", stderr.String())
	}
	if _, err := os.Stat(filepath.Join(home, "policy.cue")); err != nil {
		t.Fatalf("no host in OA_HOME: %v", err)
	}
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"quickstart"}, {"host", "init"}, {"pull", "clinic-triage@sha256:" + strings.Repeat("0", 64), "-o", t.TempDir()}} {
		c := exec.Command(bin, args...)
		c.Env = append(os.Environ(), "OA_HOME="+file)
		b, _ := c.CombinedOutput()
		if code := c.ProcessState.ExitCode(); code != 2 {
			t.Errorf("oa %v with OA_HOME a file: exit code %d, want 2: %s", args, code, b)
		}
		if !strings.Contains(string(b), "home_not_folder") {
			t.Errorf("oa %v with OA_HOME a file: want home_not_folder in:\n%s", args, b)
		}
		if strings.Contains(string(b), "host_exists") {
			t.Errorf("oa %v with OA_HOME a file: host_exists should not be in:\n%s", args, b)
		}
	}
}
