package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/oa-dev/oa/testkit/fleettest"
)

// TestFleetPublishProgressOnlyOnATerminal: oa fleet publish prints its
// progress lines (hosts done of total) on a terminal, and none when its
// output is a pipe or --json is given, where a script or a JSON consumer
// reads it.
func TestFleetPublishProgressOnlyOnATerminal(t *testing.T) {
	f := fleettest.New(t)
	var ids []string
	for i := 1; i <= 20; i++ {
		ids = append(ids, fmt.Sprintf("h%02d", i))
	}
	specFile := f.WriteSpec(f.Spec(f.Release, ids, ""))
	const last = "published the envelopes of 20/20 hosts"
	out, errOut, code := oaProc(t, "", "fleet", "publish", "--fleet", specFile, "--key", f.KeyFile)
	wantExit(t, "fleet publish", code, 0, out, errOut)
	wantHas(t, "fleet publish", out, "20 envelopes written")
	wantLacks(t, "progress off a terminal", out+errOut, "hosts\n", "/20")
	if _, err := exec.LookPath("script"); err != nil {
		t.Skip("no script(1) to run oa on a terminal: the progress shown on one is not checked")
	}
	onTerminal := func(args ...string) string {
		t.Helper()
		line := oaBinary(t) + " " + strings.Join(args, " ")
		cmd := exec.Command("script", "-qec", line, "/dev/null")
		cmd.Env = append(os.Environ(), "COSIGN_PASSWORD="+fleettest.KeyPassword)
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s on a terminal: %v\n%s", line, err, b)
		}
		return string(b)
	}
	got := onTerminal("fleet", "publish", "--fleet", specFile, "--key", f.KeyFile)
	wantHas(t, "no progress on a terminal", got, "checked the current envelopes of 20/20 hosts", last)
	if got := onTerminal("fleet", "publish", "--fleet", specFile, "--key", f.KeyFile, "--json"); strings.Contains(got, "/20 hosts") {
		t.Fatalf("progress with --json on a terminal:\n%s", got)
	}
}
