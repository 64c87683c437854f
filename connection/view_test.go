package connection_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/oa-dev/oa/connection"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/sandbox"
	"github.com/oa-dev/oa/resolve"
)

// TestViewFollowsTheConnection: the view of a real connection goes from
// unverified (added) to ready (verified, its tools and authority shown)
// to disabled, keeping its revision; a record that does not verify is
// unverifiable and shows nothing else.
func TestViewFollowsTheConnection(t *testing.T) {
	ctx := context.Background()
	home, h := newHost(t)
	defer h.Close()
	change := connection.Change{By: "ops", Now: time.Now()}
	rec, err := connection.Add(ctx, h, connection.AddOptions{Name: "sandbox", Connector: resolve.SandboxConnector, Config: connector.Config{Command: connector.SandboxCommand}}, change)
	if err != nil {
		t.Fatal(err)
	}
	v := connection.ViewOf(rec.Name, rec)
	if v.State != connection.StateUnverified || v.Verified || v.AuthorityDigest != "" || len(v.Tools) != 0 {
		t.Fatalf("added: %+v, want unverified with no authority or tools", v)
	}
	if v.Confinement != "in-process: the built-in sandbox runs inside oa" {
		t.Fatalf("sandbox confinement %q", v.Confinement)
	}
	rec, err = connection.Verify(ctx, h, "sandbox", connector.Options{SandboxDir: sandbox.Dir(home)}, change)
	if err != nil {
		t.Fatal(err)
	}
	v = connection.ViewOf(rec.Name, rec)
	if v.State != connection.StateReady || !v.Verified || v.AuthorityDigest != rec.AuthorityDigest() || v.InventoryDigest == "" || v.VerifiedBy != "ops" || len(v.Tools) == 0 {
		t.Fatalf("verified: %+v, want ready with its authority, inventory and tools", v)
	}
	rec, err = connection.SetEnabled(ctx, h, "sandbox", false, change)
	if err != nil {
		t.Fatal(err)
	}
	if d := connection.ViewOf(rec.Name, rec); d.State != connection.StateDisabled || d.Revision != v.Revision {
		t.Fatalf("disabled: state %s revision %d, want disabled at revision %d", d.State, d.Revision, v.Revision)
	}
	if u := connection.ViewOf("edited", nil); !reflect.DeepEqual(u, connection.View{Name: "edited", State: connection.StateUnverifiable}) {
		t.Fatalf("unverifiable: %+v", u)
	}
}

// TestStateOrder: a connection that is both disabled and unverified reads
// disabled, and a verified one not reached at its last verification reads
// offline.
func TestStateOrder(t *testing.T) {
	verified := &connection.Verification{Revision: 1}
	for _, c := range []struct {
		rec  connection.Record
		want string
	}{
		{connection.Record{Revision: 1, Enabled: false}, connection.StateDisabled},
		{connection.Record{Revision: 1, Enabled: true}, connection.StateUnverified},
		{connection.Record{Revision: 2, Enabled: true, Online: true, Verification: verified}, connection.StateUnverified},
		{connection.Record{Revision: 1, Enabled: true, Online: false, Verification: verified}, connection.StateOffline},
		{connection.Record{Revision: 1, Enabled: true, Online: true, Verification: verified}, connection.StateReady},
	} {
		if got := c.rec.State(); got != c.want {
			t.Errorf("%+v: state %s, want %s", c.rec, got, c.want)
		}
	}
}
