package coordinator_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oa-dev/oa/bind"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/confine"
	"github.com/oa-dev/oa/connector/confine/launcher"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/connectortest"
	"github.com/oa-dev/oa/testkit/hosttest"
	"github.com/oa-dev/oa/testkit/servetest"
)

// TestLooserConfinementChangesThePlan: a connection's profile is replaced
// by a looser one (TCP to any port) and verified while the coordinator
// serves; the next run is refused before it reaches the server
// (did_not_run, plan_changed), and the plan check oa bind inspect makes
// names the confinement link.
func TestLooserConfinementChangesThePlan(t *testing.T) {
	ctx := context.Background()
	cc := openConfinedClinic(t, func(dir string) *confine.Profile { return connectortest.Allow(dir) })
	h, host, b, cfg, operator, run := cc.h, cc.host, cc.binding, cc.cfg, cc.operator, cc.run
	if res := run("confined"); res.Outcome != contract.OutcomeNotSureIfSaved {
		t.Fatalf("under the approved profile: %+v", res)
	}
	looser := *cfg.Confinement
	looser.Net = confine.NetAny
	cfg.Confinement = &looser
	h.AddConnection(host, "records", resolve.SandboxConnector, cfg)
	wantResult(t, "after loosening", run("loosened"), contract.OutcomeDidNotRun, contract.ReasonPlanChanged)
	if !strings.Contains(operator.String(), "plan changed: confinement") {
		t.Errorf("the operator was not told the confinement changed:\n%s", operator.String())
	}
	art, err := bind.FetchRelease(ctx, host, b, oci.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	report, _, err := bind.Check(ctx, host, b, art, bind.CheckOptions{Now: h.Now})
	if err != nil {
		t.Fatal(err)
	}
	named := false
	for _, ch := range report.Changes {
		named = named || (ch.Link == bind.LinkConfinement && strings.Contains(ch.Detail, "tcp any"))
	}
	if report.Approved {
		t.Errorf("bind.Check approved the loosened confinement, want not: %+v", report.Changes)
	}
	if !named {
		t.Errorf("bind.Check changes %+v; want the confinement link named with tcp any", report.Changes)
	}
}

// confinedClinic is the clinic deployment bound with its records
// connection on the Go test server under a profile, served by a
// coordinator whose operator lines are kept.
type confinedClinic struct {
	h        *hosttest.Host
	host     *host.Host
	binding  *bind.Binding
	cfg      connector.Config
	operator *strings.Builder
	// run makes one append_triage_note run with request id id.
	run func(id string) *coordinator.Result
}

// openConfinedClinic binds and serves the clinic deployment with its
// records connection under the profile made for the test server's tools
// folder.
func openConfinedClinic(t *testing.T, profile func(toolsDir string) *confine.Profile) *confinedClinic {
	t.Helper()
	ctx := context.Background()
	h := hosttest.New(t, nil)
	h.WriteRegistry(resolve.StarterRegistry(hosttest.Name))
	opened := h.Open()
	tools := connectortest.WriteTools(t, t.TempDir(), []connectortest.ToolSpec{
		{Name: "read_record", Description: "Read a record.", Annotations: json.RawMessage(`{"readOnlyHint":true}`),
			Result: json.RawMessage(`{"record":"AB-1234","status":"open","notes":[]}`)},
		{Name: "append_note", Description: "Append a note.", Annotations: json.RawMessage(`{"readOnlyHint":false}`),
			Result: json.RawMessage(`{"saved":true}`)},
	})
	cfg := connector.Config{Command: connectortest.Server(t), Args: []string{"--tools", tools}, Confinement: profile(filepath.Dir(tools))}
	h.AddConnection(opened, "records", resolve.SandboxConnector, cfg)
	b := h.Bind(opened, "claude-test")
	operator := &strings.Builder{}
	c, err := coordinator.Open(ctx, coordinator.Options{Home: h.Home, Deployment: "clinic", Operator: operator, EffectTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	run := func(id string) *coordinator.Result {
		res, err := c.Run(ctx, coordinator.RunRequest{Workflow: "append_triage_note", RequestID: id, Wait: 30 * time.Second,
			Inputs: json.RawMessage(`{"record_ref":"AB-1234","urgency":"soon","summary":"A note."}`)})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	return &confinedClinic{h: h, host: opened, binding: b, cfg: cfg, operator: operator, run: run}
}

// TestLooserConfinementByCLI is the operator's path of the same change:
// while `oa coordinator serve` runs a deployment whose connection is
// confined, the operator loosens the profile with `oa connection add
// --replace … --net any` and verifies it; the running coordinator refuses
// the next run before it reaches the server (did_not_run, plan_changed)
// and `oa bind inspect` exits 2 naming the confinement link.
func TestLooserConfinementByCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds oa")
	}
	h := &servetest.Host{Host: hosttest.New(t, nil), OA: servetest.Binary(t)}
	h.WriteRegistry(resolve.StarterRegistry(hosttest.Name))
	host := h.Open()
	tools := connectortest.WriteTools(t, t.TempDir(), []connectortest.ToolSpec{
		{Name: "read_record", Description: "Read a record.", Annotations: json.RawMessage(`{"readOnlyHint":true}`),
			Result: json.RawMessage(`{"record":"AB-1234","status":"open","notes":[]}`)},
		{Name: "append_note", Description: "Append a note.", Annotations: json.RawMessage(`{"readOnlyHint":false}`),
			Result: json.RawMessage(`{"saved":true}`)},
	})
	server := connectortest.Server(t)
	h.AddConnection(host, "records", resolve.SandboxConnector, connector.Config{Command: server, Args: []string{"--tools", tools}, Confinement: connectortest.Allow(filepath.Dir(tools))})
	h.Bind(host, "claude-test")
	c := h.Connect(t, servetest.ClientOptions{})
	if res := c.Run("confined", triage("AB-1234", "A note.")); res["outcome"] != string(contract.OutcomeNotSureIfSaved) {
		t.Fatalf("under the approved profile: %v", res)
	}

	oa := func(args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(h.OA, args...)
		cmd.Env = append(os.Environ(), "OA_HOME="+h.Home)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("oa %v: %v", args, err)
		}
		return string(out), cmd.ProcessState.ExitCode()
	}
	if out, code := oa("connection", "add-stdio", "records", "--replace", "--connector", resolve.SandboxConnector, "--as", "Dr Ada",
		"--write", filepath.Dir(tools), "--net", "any", "--", server, "--tools", tools); code != 0 {
		t.Fatalf("oa connection add-stdio --replace: exit %d\n%s", code, out)
	}
	if out, code := oa("connection", "verify", "records", "--as", "Dr Ada"); code != 0 {
		t.Fatalf("oa connection verify: exit %d, want 0\n%s", code, out)
	} else if !strings.Contains(out, "confined") {
		t.Fatalf("oa connection verify does not say confined:\n%s", out)
	}
	want(t, "after loosening", c.Run("loosened", triage("AB-1234", "Another note.")), contract.OutcomeDidNotRun, contract.ReasonPlanChanged)

	out, code := oa("bind", "inspect", "clinic", "--json")
	var report struct {
		Approved bool `json:"approved"`
		Changes  []struct{ Link, Detail string }
	}
	if i := strings.Index(out, "{"); i >= 0 {
		_ = json.NewDecoder(strings.NewReader(out[i:])).Decode(&report)
	}
	named := false
	for _, ch := range report.Changes {
		named = named || (ch.Link == string(bind.LinkConfinement) && strings.Contains(ch.Detail, "tcp any"))
	}
	if code != 2 {
		t.Errorf("oa bind inspect: exit %d, want 2\n%s", code, out)
	}
	if report.Approved {
		t.Errorf("oa bind inspect approved the loosened confinement, want not\n%s", out)
	}
	if !named {
		t.Errorf("oa bind inspect does not name the confinement link with tcp any\n%s", out)
	}
}

// TestLauncherRunsEarly: the oa binary started as the confinement launcher
// takes over before the package inits a launcher does not need — CUE's
// decimal tables, protobuf descriptors, SQLite's support packages — as
// GODEBUG=inittrace=1 shows (a launcher given a bad spec stops at once,
// exit 126, after the inits that ran before it). Without package
// launcher's early place in the init order it ran after all of them.
func TestLauncherRunsEarly(t *testing.T) {
	if testing.Short() {
		t.Skip("builds oa")
	}
	cmd := exec.Command(servetest.Binary(t), launcher.Arg, "not a spec", "/bin/true", "true")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, _ := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != launcher.ExitFailed {
		t.Fatalf("the launcher: exit %d, want %d\n%s", code, launcher.ExitFailed, out)
	}
	if !strings.Contains(string(out), "confined start failed") {
		t.Fatalf("the launcher did not say confined start failed:\n%s", out)
	}
	inited := map[string]bool{}
	for line := range strings.SplitSeq(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "init" {
			inited[f[1]] = true
		}
	}
	if !inited["github.com/landlock-lsm/go-landlock/landlock"] {
		t.Fatalf("no inittrace of the launcher's own imports:\n%s", out)
	}
	for _, heavy := range []string{"github.com/cockroachdb/apd/v3", "google.golang.org/protobuf/reflect/protodesc", "google.golang.org/protobuf/types/descriptorpb", "modernc.org/mathutil", "github.com/oa-dev/oa/blocking"} {
		if inited[heavy] {
			t.Errorf("%s was initialized before the launcher took over", heavy)
		}
	}
}
