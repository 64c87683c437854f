package bind_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oa-dev/oa/bind"
	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/confine"
	"github.com/oa-dev/oa/connector/confine/launcher"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/connectortest"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// TestWeakerKernelIsAChangedLink: a deployment bound on this kernel
// whose connection's server has a TCP port list; with the Landlock ABI
// capped at 5 the server no longer has its abstract unix sockets scoped,
// so the plan check the coordinator makes (bind.Check, and its
// Checker, which remembers approvals) and oa bind
// inspect refuse plan_digest_mismatch naming the confinement link, in
// words; capped at 6 the level is the same and the plan is approved;
// capped at 3 (no TCP rules) the level is below the default minimum,
// refused at the same link.
func TestWeakerKernelIsAChangedLink(t *testing.T) {
	if confine.KernelABI() < launcher.ABIScoped {
		t.Skipf("this kernel offers Landlock ABI %d; the test lowers it from %d", confine.KernelABI(), launcher.ABIScoped)
	}
	ctx := context.Background()
	f := &fixture{Host: hosttest.New(t, nil)}
	f.WriteRegistry(resolve.StarterRegistry(hosttest.Name))
	f.host = f.Open()
	f.toolsFile = filepath.Join(t.TempDir(), "tools.json")
	f.setTools(serverTools("Read a record."))
	net, err := confine.ParseNet("8443")
	if err != nil {
		t.Fatal(err)
	}
	cfg := connector.Config{Command: connectortest.Server(t), Args: []string{"--tools", f.toolsFile}, Confinement: &confine.Profile{Read: []string{filepath.Dir(f.toolsFile)}, Net: net}}
	f.AddConnection(f.host, "records", resolve.SandboxConnector, cfg)
	b := f.Bind(f.host, model)
	art, err := bind.FetchRelease(ctx, f.host, b, oci.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	k := bind.NewChecker(f.host, b, art) // the coordinator's, remembering approvals
	check := func() *bind.Report {
		t.Helper()
		r, _, err := bind.Check(ctx, f.host, b, art, bind.CheckOptions{Now: f.Now})
		if err != nil {
			t.Fatal(err)
		}
		if remembered, _, err := k.Check(ctx, f.Now); err != nil || remembered.Approved != r.Approved || len(remembered.Changes) != len(r.Changes) {
			t.Fatalf("the coordinator's checker %+v (%v) disagrees with bind.Check %+v", remembered, err, r)
		}
		inspected, err := bind.Inspect(ctx, f.host, b, bind.InspectOptions{Now: f.Now})
		if err != nil || inspected.Approved != r.Approved || len(inspected.Changes) != len(r.Changes) {
			t.Fatalf("oa bind inspect %+v (%v) disagrees with the coordinator's check %+v", inspected, err, r)
		}
		return r
	}
	if r := check(); !r.Approved {
		t.Fatalf("on the kernel it was bound on: %+v", r)
	}
	real, err := connector.Enforcement(cfg)
	if err != nil {
		t.Fatal(err)
	}

	t.Setenv(confine.ABIMaxEnv, "6")
	if at6, _ := connector.Enforcement(cfg); strings.Join(at6.Guarantees, ",") == strings.Join(real.Guarantees, ",") {
		if r := check(); !r.Approved {
			t.Fatalf("ABI 6 holds the same guarantees (%v), yet: %+v", real.Guarantees, r)
		}
	}

	t.Setenv(confine.ABIMaxEnv, "5")
	r := check()
	if r.Approved || len(r.Changes) != 2 { // both capabilities use the connection
		t.Fatalf("ABI 5: %+v", r)
	}
	for _, ch := range r.Changes {
		if ch.Link != bind.LinkConfinement || !strings.Contains(ch.Detail, "the confinement level of connection records is now: ") || !strings.Contains(ch.Detail, "no longer holds: "+confine.GuaranteeAbstractSockets) {
			t.Fatalf("ABI 5: change %+v", ch)
		}
	}
	if err := r.Err(); !hosttest.HasCode(t, err, blocking.PlanDigestMismatch) || !strings.Contains(err.Error(), string(bind.LinkConfinement)) {
		t.Fatalf("ABI 5: Err = %v", err)
	}

	t.Setenv(confine.ABIMaxEnv, "3")
	r = check()
	if r.Approved || len(r.Refusals) == 0 || r.Refusals[0].Code != blocking.ConfinementBelowMinimum || r.Changes[0].Link != bind.LinkConfinement {
		t.Fatalf("ABI 3: %+v", r)
	}
}
