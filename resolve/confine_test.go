package resolve_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/confine"
	"github.com/oa-dev/oa/connector/confine/launcher"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/connectortest"
)

// TestPlanCarriesConfinement: the plan entry of a connection carries its
// profile (none for the default, so older plans keep their digest), and a
// host policy that forbids unconfined connections refuses to plan one.
func TestPlanCarriesConfinement(t *testing.T) {
	f := newFixture(t, starter())
	tools := connectortest.WriteTools(t, t.TempDir(), []connectortest.ToolSpec{
		{Name: "read_record", Description: "Read a record.", Annotations: []byte(`{"readOnlyHint":true}`)},
		{Name: "append_note", Description: "Append a note.", Annotations: []byte(`{"readOnlyHint":false}`)},
	})
	cfg := connector.Config{Command: connectortest.Server(t), Args: []string{"--tools", tools}}
	cfg.Confinement = &confine.Profile{Read: []string{filepath.Dir(tools)}}
	f.addVerified("records", resolve.SandboxConnector, cfg)
	plan, err := f.compute(true)
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := plan.Entry("records.read"); e.Confinement == nil || e.Confinement.Read[0] != filepath.Dir(tools) {
		t.Fatalf("entry %+v does not carry the profile", e)
	}
	cfg.Confinement = &confine.Profile{Unconfined: true}
	f.addVerified("records", resolve.SandboxConnector, cfg)
	if _, err := f.compute(true); err != nil {
		t.Fatalf("the starter policy allows unconfined: %v", err)
	}
	// The policy switch as Load reads it (host.Policy.AllowsUnconfined;
	// the policy file itself is tested in connection), set here: a new
	// policy would need a new admission.
	st, err := resolve.Load(context.Background(), f.host, f.Release, f.Now)
	if err != nil || st.ForbidUnconfined {
		t.Fatalf("load: %v, forbid %v under the starter policy", err, st != nil && st.ForbidUnconfined)
	}
	st.ForbidUnconfined = true
	if _, err := resolve.Resolve(st, resolve.Request{Deployment: "clinic", Model: "claude-test"}); !contains(codes(t, err), blocking.ConfinementForbidden) {
		t.Fatalf("an unconfined connection under a policy forbidding it: %v", err)
	}
}

// TestPlanRecordsTheLevelEnforced: the plan entry of a confined
// connection records the guarantees this host holds its server to and the
// seccomp filter's version, live when the plan is resolved. A kernel
// that holds fewer (the Landlock ABI capped at 5: abstract unix sockets
// are no longer scoped for a server with a TCP port list) changes the
// plan digest; one that holds the same (capped at 6) does not; one below
// the policy's minimum (capped at 3: no TCP rules) is refused
// confinement_below_minimum at the capability, naming what is missing.
func TestPlanRecordsTheLevelEnforced(t *testing.T) {
	if confine.KernelABI() < launcher.ABIScoped {
		t.Skipf("this kernel offers Landlock ABI %d; the test lowers it from %d", confine.KernelABI(), launcher.ABIScoped)
	}
	f := newFixture(t, starter())
	tools := connectortest.WriteTools(t, t.TempDir(), []connectortest.ToolSpec{
		{Name: "read_record", Description: "Read a record.", Annotations: []byte(`{"readOnlyHint":true}`)},
		{Name: "append_note", Description: "Append a note.", Annotations: []byte(`{"readOnlyHint":false}`)},
	})
	net, err := confine.ParseNet("8443")
	if err != nil {
		t.Fatal(err)
	}
	cfg := connector.Config{Command: connectortest.Server(t), Args: []string{"--tools", tools}, Confinement: &confine.Profile{Read: []string{filepath.Dir(tools)}, Net: net}}
	f.addVerified("records", resolve.SandboxConnector, cfg)
	level := func() confine.Level {
		t.Helper()
		l, err := connector.Enforcement(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	plan, err := f.compute(false)
	if err != nil {
		t.Fatal(err)
	}
	real := level()
	e, _ := plan.Entry("records.read")
	if e.Enforced == nil || !slices.Equal(e.Enforced.Guarantees, real.Guarantees) || e.Enforced.Filter != real.Filter {
		t.Fatalf("entry records %+v, the host holds %v (filter %q)", e.Enforced, real.Guarantees, real.Filter)
	}
	if !slices.Contains(e.Enforced.Guarantees, confine.GuaranteeAbstractSockets) || !slices.IsSortedFunc(e.Enforced.Guarantees, func(a, b string) int {
		return slices.Index(confine.Guarantees, a) - slices.Index(confine.Guarantees, b)
	}) {
		t.Fatalf("guarantees %v: not in confine.Guarantees' order, or abstract sockets not held at ABI %d", e.Enforced.Guarantees, real.ABI)
	}

	t.Setenv(confine.ABIMaxEnv, "6")
	same, err := f.compute(false)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(level().Guarantees, real.Guarantees) && same.Digest() != plan.Digest() {
		t.Fatalf("the level held at ABI 6 is the same (%v) but the plan digest changed", real.Guarantees)
	}

	t.Setenv(confine.ABIMaxEnv, "5")
	weaker, err := f.compute(false)
	if err != nil {
		t.Fatalf("ABI 5 holds the default minimum (filesystem, network): %v", err)
	}
	if weaker.Digest() == plan.Digest() {
		t.Fatal("a kernel that holds fewer guarantees plans the same digest")
	}
	if e, _ := weaker.Entry("records.read"); e.Enforced == nil || slices.Contains(e.Enforced.Guarantees, confine.GuaranteeAbstractSockets) {
		t.Fatalf("at ABI 5 the entry records %+v", e.Enforced)
	}

	t.Setenv(confine.ABIMaxEnv, "3")
	_, err = f.compute(false)
	l := blocking.Refusals(err)
	if len(l) == 0 || l[0].Code != blocking.ConfinementBelowMinimum || !strings.HasPrefix(l[0].Path, "capabilities.records.") || !strings.Contains(l[0].Detail, "records") || !strings.Contains(l[0].Detail, confine.GuaranteeNetwork) {
		t.Fatalf("ABI 3 under the default minimum: %v", err)
	}
	// A policy asking for no guarantee plans it (the minimum as Load reads
	// it from the policy, set here: a new policy needs a new admission).
	st, err := resolve.Load(context.Background(), f.host, f.Release, f.Now)
	if err != nil || !slices.Equal(st.ConfinementMinimum, confine.DefaultMinimum) {
		t.Fatalf("load: %v, minimum %v", err, st.ConfinementMinimum)
	}
	st.ConfinementMinimum = nil
	if _, err := resolve.Resolve(st, resolve.Request{Deployment: "clinic", Model: "claude-test"}); err != nil {
		t.Fatalf("ABI 3 with no minimum: %v", err)
	}

	t.Setenv(confine.ABIMaxEnv, "99")
	back, err := f.compute(false)
	if err != nil || back.Digest() != plan.Digest() {
		t.Fatalf("back on the real kernel: %v, digest changed %v", err, err == nil && back.Digest() != plan.Digest())
	}
}

// TestResolveRefusesAnUnconfinableHost: a host that cannot confine a
// confined connection's server at all (no Landlock) refuses to plan it,
// confinement_unavailable at the capability, and nothing of an
// in-process connection asks the kernel.
func TestResolveRefusesAnUnconfinableHost(t *testing.T) {
	f := newFixture(t, starter())
	tools := connectortest.WriteTools(t, t.TempDir(), []connectortest.ToolSpec{
		{Name: "read_record", Description: "Read a record.", Annotations: []byte(`{"readOnlyHint":true}`)},
		{Name: "append_note", Description: "Append a note.", Annotations: []byte(`{"readOnlyHint":false}`)},
	})
	f.addVerified("records", resolve.SandboxConnector, connector.Config{Command: connectortest.Server(t), Args: []string{"--tools", tools}, Confinement: connectortest.Allow(filepath.Dir(tools))})
	st, err := resolve.Load(context.Background(), f.host, f.Release, f.Now)
	if err != nil {
		t.Fatal(err)
	}
	asked := 0
	st.Enforcement = func(connector.Config) (confine.Level, error) {
		asked++
		return confine.Level{}, blocking.New(blocking.ConfinementUnavailable, "this kernel offers no Landlock")
	}
	_, err = resolve.Resolve(st, resolve.Request{Deployment: "clinic", Model: "claude-test"})
	l := blocking.Refusals(err)
	if len(l) != 2 || l[0].Code != blocking.ConfinementUnavailable || l[0].Path == l[1].Path || !strings.HasPrefix(l[1].Path, "capabilities.records.") {
		t.Fatalf("no Landlock: %v", err)
	}
	if asked != 1 {
		t.Fatalf("the level of one connection was asked %d times in one resolution", asked)
	}
}
