package fleet_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/testkit/fleettest"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// TestFleetKeyMustBeItsOwn: a host policy whose fleet key is also a
// publisher's or an authority's is refused, located at the fleet key.
func TestFleetKeyMustBeItsOwn(t *testing.T) {
	f := fleettest.New(t)
	for name, key := range map[string][]byte{"publisher": f.Publisher.Public, "authority": f.Authority.Public} {
		dir := t.TempDir()
		if err := host.Init(dir, host.InitOptions{Host: "h01", Publishers: map[string][]byte{"publisher": f.Publisher.Public}, Authorities: map[string][]byte{"authority": f.Authority.Public}}); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, host.PolicyFile)
		old, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, append(old, fleettest.FleetSection("clinics", key, true)...), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err = host.LoadPolicy(p)
		if !hosttest.HasCode(t, err, blocking.FleetKeyReused) {
			t.Fatalf("fleet key = %s key: %v", name, err)
		}
		if rs := blocking.Refusals(err); rs[0].Path != "fleet.keys.ops.key" {
			t.Fatalf("fleet key = %s key: located at %q", name, rs[0].Path)
		}
	}
}
