package fleet_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/oa-dev/oa/fleet"
	"github.com/oa-dev/oa/testkit/fleettest"
)

// TestProvisionFromV1Envelope: a host still provisions from an envelope a
// fleet signed as oa.fleet.envelope/v1 before the upgrade, and the
// fleet's next publish replaces it with a v2 one (only v2 is written).
func TestProvisionFromV1Envelope(t *testing.T) {
	ctx := context.Background()
	f := fleettest.New(t)
	h := f.NewHost("h01", fleettest.HostOptions{PreApprove: true})
	spec := f.LoadSpec("h01")
	if _, err := fleet.Publish(ctx, spec, f.Key.Signer, fleet.Options{}); err != nil {
		t.Fatal(err)
	}
	tag := fleet.EnvelopeTag("h01")
	env, payload, err := fleet.ReadEnvelope(ctx, f.Repository, tag)
	if err != nil || env == nil || env.Type != fleet.EnvelopeType || bytes.Contains(payload, []byte(`"max_risk"`)) {
		t.Fatalf("publish wrote %v %s", err, payload)
	}
	// The fleet as it was before the upgrade: the same envelope as v1.
	env.Type, env.Seq = fleet.EnvelopeTypeV1, env.Seq+1
	if err := fleet.PushSigned(ctx, f.Repository, fleet.EnvelopeArtifactType, tag, env, f.Key.Signer); err != nil {
		t.Fatal(err)
	}
	if old, payload, err := fleet.ReadEnvelope(ctx, f.Repository, tag); err != nil || old.Type != fleet.EnvelopeTypeV1 || !bytes.Contains(payload, []byte(`"max_risk"`)) {
		t.Fatalf("the v1 envelope pushed: %v %s", err, payload)
	}
	r, err := provision(t, f, h)
	if err != nil || r.Status.State != fleet.Bound || r.Status.EnvelopeSeq != env.Seq {
		t.Fatalf("provisioning from a v1 envelope: %v %+v", err, r)
	}
	pubs, err := fleet.Publish(ctx, spec, f.Key.Signer, fleet.Options{})
	if err != nil || len(pubs) != 1 || !pubs[0].Changed {
		t.Fatalf("the publish after a v1 envelope: %v %+v", err, pubs)
	}
	if env, _, err := fleet.ReadEnvelope(ctx, f.Repository, tag); err != nil || env.Type != fleet.EnvelopeType {
		t.Fatalf("the publish after a v1 envelope wrote %v %+v", err, env)
	}
	if r, err := provision(t, f, h); err != nil || r.Status.State != fleet.Bound {
		t.Fatalf("provisioning from the v2 envelope after v1: %v %+v", err, r)
	}
}
