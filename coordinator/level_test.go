package coordinator_test

import (
	"strings"
	"testing"

	"github.com/oa-dev/oa/connector/confine"
	"github.com/oa-dev/oa/connector/confine/launcher"
	"github.com/oa-dev/oa/contract"
)

// TestWeakerKernelStopsRuns: a deployment bound on this kernel, whose
// connection's server has a TCP port list, is served; once the kernel
// holds fewer guarantees (the Landlock ABI capped at 5: abstract unix
// sockets no longer scoped) the next run is refused before it reaches the
// server (did_not_run, plan_changed), and the operator is told the
// confinement changed; never a run on the weaker level.
func TestWeakerKernelStopsRuns(t *testing.T) {
	if confine.KernelABI() < launcher.ABIScoped {
		t.Skipf("this kernel offers Landlock ABI %d; the test lowers it from %d", confine.KernelABI(), launcher.ABIScoped)
	}
	net, err := confine.ParseNet("8443")
	if err != nil {
		t.Fatal(err)
	}
	cc := openConfinedClinic(t, func(dir string) *confine.Profile { return &confine.Profile{Write: []string{dir}, Net: net} })
	operator, run := cc.operator, cc.run
	if res := run("bound-kernel"); res.Outcome != contract.OutcomeNotSureIfSaved {
		t.Fatalf("on the kernel it was bound on: %+v", res)
	}
	t.Setenv(confine.ABIMaxEnv, "5")
	wantResult(t, "on a weaker kernel", run("weaker-kernel"), contract.OutcomeDidNotRun, contract.ReasonPlanChanged)
	if !strings.Contains(operator.String(), "plan changed: confinement") {
		t.Errorf("the operator was not told the confinement changed:\n%s", operator.String())
	}
}
