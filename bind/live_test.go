package bind_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/oa-dev/oa/bind"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/oci"
)

// TestInspectChecksTheLiveDeployment: Inspect approves an unchanged
// deployment; a downstream tool that changed is a changed link only when
// the connections are probed; a corrupted release is a report naming the
// artifact, not an error.
func TestInspectChecksTheLiveDeployment(t *testing.T) {
	ctx := context.Background()
	f, b := newFixture(t)
	opts := bind.InspectOptions{Transport: oci.OpenOptions{}, Now: f.Now, Probe: true, Connector: connector.Options{}}
	r, err := bind.Inspect(ctx, f.host, b, opts)
	if err != nil || !r.Approved || r.Err() != nil {
		t.Fatalf("unchanged: %+v, %v; want approved", r, err)
	}
	tools := serverTools("Read a record.")
	tools[0].InputSchema = json.RawMessage(`{"type":"object","properties":{"record":{"type":"string","maxLength":7}}}`)
	f.setTools(tools)
	if r, err := bind.Inspect(ctx, f.host, b, opts); err != nil || r.Approved || len(links(r)) == 0 || links(r)[0] != bind.LinkToolInventory {
		t.Fatalf("changed tool, probed: %+v, %v; want tool_inventory", r, err)
	}
	unprobed := opts
	unprobed.Probe = false
	if r, err := bind.Inspect(ctx, f.host, b, unprobed); err != nil || !r.Approved {
		t.Fatalf("changed tool, not probed: %+v, %v; want approved (the verified inventory did not change)", r, err)
	}
	corruptIR(f)
	if r, err := bind.Inspect(ctx, f.host, b, opts); err != nil || r.Approved || len(links(r)) == 0 || links(r)[0] != bind.LinkArtifact {
		t.Fatalf("corrupted release: %+v, %v; want a report naming the artifact", r, err)
	}
}
