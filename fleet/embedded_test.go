package fleet_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"

	"github.com/oa-dev/oa/fleet"
	"github.com/oa-dev/oa/testkit/fleettest"
)

// TestStatusEmbeddedOneRequest: a host's status as provisioning pushes
// it embeds the document in its manifest, so `oa fleet status` reads each
// host with one request; embedded bytes that are not the layer's (a
// registry or writer that swapped them) are ignored and the blob is read
// instead, so what is believed is always the content-addressed layer.
func TestStatusEmbeddedOneRequest(t *testing.T) {
	ctx := context.Background()
	f := fleettest.New(t)
	h := f.NewHost("h01", fleettest.HostOptions{PreApprove: true})
	spec := f.LoadSpec("h01")
	now := time.Now()
	if _, err := fleet.Publish(ctx, spec, f.Key.Signer, fleet.Options{Now: now}); err != nil {
		t.Fatal(err)
	}
	if r, err := provisionAt(t, f, h, now); err != nil || r.Status.State != fleet.Bound {
		t.Fatalf("provision: %v %+v", err, r)
	}
	f.Registry.ResetCounters()
	list, err := fleet.ReadStatuses(ctx, spec, now, time.Hour, fleet.Options{})
	if err != nil || len(list) != 1 || list[0].Status == nil || list[0].Status.State != fleet.Bound || list[0].Signed != fleet.SignedSelf {
		t.Fatalf("status: %v %+v", err, list)
	}
	if n := f.Registry.Requests(); n != 1 {
		t.Fatalf("reading one host's status made %d requests, want 1 (its manifest)", n)
	}

	// Swap the embedded bytes for a status that says revoked.
	repo := f.Registry.Repository(t, "fleet/clinics")
	_, raw, err := oras.FetchBytes(ctx, repo, fleet.StatusTag("h01"), oras.DefaultFetchBytesOptions)
	if err != nil {
		t.Fatal(err)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(raw, &m); err != nil || len(m.Layers) != 1 || len(m.Layers[0].Data) == 0 {
		t.Fatalf("the status manifest embeds no document: %s", raw)
	}
	var forged map[string]any
	if err := json.Unmarshal(m.Layers[0].Data, &forged); err != nil {
		t.Fatal(err)
	}
	forged["state"] = string(fleet.Revoked)
	m.Layers[0].Data, _ = json.Marshal(forged)
	raw, _ = json.Marshal(m)
	if _, err := oras.TagBytes(ctx, repo, ocispec.MediaTypeImageManifest, raw, fleet.StatusTag("h01")); err != nil {
		t.Fatal(err)
	}
	f.Registry.ResetCounters()
	list, err = fleet.ReadStatuses(ctx, spec, now, time.Hour, fleet.Options{})
	if err != nil || list[0].Status == nil || list[0].Status.State != fleet.Bound || list[0].Signed != fleet.SignedSelf {
		t.Fatalf("status with swapped embedded bytes: %v %+v", err, list)
	}
	if n := f.Registry.Requests(); n != 2 {
		t.Fatalf("swapped embedded bytes: %d requests, want 2 (the manifest, then the blob)", n)
	}
}
