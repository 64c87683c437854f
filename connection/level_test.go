package connection_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connection"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/confine"
	"github.com/oa-dev/oa/connector/confine/launcher"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/testkit/connectortest"
)

// TestVerifyOnAWeakerKernel: a connection verified on this kernel is
// verified again on weaker ones (the Landlock ABI capped). Where the
// level still meets the policy's minimum, the verification is recorded
// and says what changed (the ABI then and now, the guarantees no longer
// held). Below the minimum, or with no Landlock at all, the verify is
// refused with the named reason and what changed, and nothing is
// recorded: the connection stays online with its last verification, so
// its deployments are refused by the plan check, never taken down
// silently. A policy's own minimum is held the same way.
func TestVerifyOnAWeakerKernel(t *testing.T) {
	real := confine.KernelABI()
	if real < launcher.ABIScoped {
		t.Skipf("this kernel offers Landlock ABI %d; the test lowers it from %d", real, launcher.ABIScoped)
	}
	home, h := newHost(t)
	ctx := context.Background()
	change := connection.Change{By: "Test Operator", Now: time.Now()}
	net, err := confine.ParseNet("8443")
	if err != nil {
		t.Fatal(err)
	}
	cfg := connector.Config{Command: connectortest.Probe(t), Confinement: &confine.Profile{Net: net}}
	if _, err := connection.Add(ctx, h, connection.AddOptions{Name: "crm", Connector: "crm.test", Config: cfg}, change); err != nil {
		t.Fatal(err)
	}
	rec, ch, err := connection.VerifyLevel(ctx, h, "crm", connector.Options{}, change)
	if err != nil || !rec.Online || rec.Verification.Enforced == nil || ch.Changed() {
		t.Fatalf("first verify: %v, %+v, change %+v", err, rec, ch)
	}

	t.Setenv(confine.ABIMaxEnv, "5")
	rec, ch, err = connection.VerifyLevel(ctx, h, "crm", connector.Options{}, change)
	if err != nil || !rec.Online || rec.Verification.Enforced.ABI != 5 {
		t.Fatalf("ABI 5 holds the default minimum: %v, %+v", err, rec)
	}
	if !ch.Changed() || !slices.Equal(ch.NoLongerHeld, []string{confine.GuaranteeAbstractSockets}) || !strings.Contains(ch.String(), fmt.Sprintf("Landlock ABI %d then, Landlock ABI 5 now", real)) {
		t.Fatalf("ABI 5: change %+v (%s)", ch, ch)
	}
	verified, err := connection.Get(ctx, h, "crm")
	if err != nil {
		t.Fatal(err)
	}

	refused := func(what string, code blocking.Code, says ...string) {
		t.Helper()
		rec, err := connection.Verify(ctx, h, "crm", connector.Options{}, change)
		l := blocking.Refusals(err)
		if rec != nil || len(l) != 1 || l[0].Code != code || l[0].Path != "confinement" {
			t.Fatalf("%s: %v, want %s alone", what, err, code)
		}
		for _, s := range says {
			if !strings.Contains(l[0].Detail, s) {
				t.Errorf("%s: %q does not say %q", what, l[0].Detail, s)
			}
		}
		now, err := connection.Get(ctx, h, "crm")
		if err != nil || now.Seq != verified.Seq || !now.Online || now.State() != connection.StateReady {
			t.Fatalf("%s: the refused verify changed the connection: %+v, %v", what, now, err)
		}
	}
	t.Setenv(confine.ABIMaxEnv, "3")
	refused("ABI 3", blocking.ConfinementBelowMinimum, "crm", "network (", "Landlock ABI 5 then, Landlock ABI 3 now", "no longer holds network")
	t.Setenv(confine.ABIMaxEnv, "0")
	refused("no Landlock", blocking.ConfinementUnavailable, "crm", "Landlock ABI 5 then, no Landlock now")

	t.Setenv(confine.ABIMaxEnv, "5")
	h.Close()
	policy := filepath.Join(home, host.PolicyFile)
	b, err := os.ReadFile(policy)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(policy, append(b, "\nconfinement: minimum: [\"filesystem\", \"network\", \"abstract-sockets\"]\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	if h, err = host.Open(ctx, home); err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	refused("a policy asking for abstract sockets", blocking.ConfinementBelowMinimum, "abstract-sockets (")
}
