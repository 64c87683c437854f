package resolve_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/confine"
	"github.com/oa-dev/oa/internal/testkit/connectortest"
	"github.com/oa-dev/oa/resolve"
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
	st, err := resolve.Load(context.Background(), f.host, f.Target, f.Desc, f.Now)
	if err != nil || st.ForbidUnconfined {
		t.Fatalf("load: %v, forbid %v under the starter policy", err, st != nil && st.ForbidUnconfined)
	}
	st.ForbidUnconfined = true
	if _, err := resolve.Resolve(st, resolve.Request{Deployment: "clinic", Model: "claude-test"}); !contains(codes(t, err), blocking.ConfinementForbidden) {
		t.Fatalf("an unconfined connection under a policy forbidding it: %v", err)
	}
}
