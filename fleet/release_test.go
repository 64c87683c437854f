package fleet_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/fleet"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/testkit/fleettest"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// TestProvisionReleaseUnparsable: an envelope whose release is not a
// reference (read once, where the envelope is checked) is refused
// fleet_envelope_invalid naming the release, before anything is copied or
// admitted; it is never read again and its parse error never dropped.
func TestProvisionReleaseUnparsable(t *testing.T) {
	ctx := context.Background()
	f := fleettest.New(t)
	h := f.NewHost("h01", fleettest.HostOptions{PreApprove: true})
	dg := digest.FromString("a release").String()
	for _, release := range []string{
		"not a reference@" + dg,
		f.Registry.Host() + "/oa/clinic-triage@sha256:not-hex",
		"clinic-triage@" + dg, // no registry: a host-local layout
	} {
		env := &fleet.Envelope{
			Type: fleet.EnvelopeType, Fleet: "clinics", Host: "h01", Seq: 1, Deployment: "clinic",
			Release: release, ArtifactDigest: dg,
			WorkerIRDigest: dg, Package: "clinic-triage", Version: "1.2.0", Model: "demo-model",
			Ceiling:  fleet.Ceiling{Capabilities: []string{}, MaxRisk: ir.ReadOnly},
			IssuedAt: time.Now().UTC().Truncate(time.Second), ExpiresAt: time.Now().UTC().Truncate(time.Second).Add(time.Hour),
		}
		if err := fleet.PushSigned(ctx, f.Repository, fleet.EnvelopeArtifactType, fleet.EnvelopeTag("h01"), env, f.Key.Signer); err != nil {
			t.Fatal(err)
		}
		r, err := provision(t, f, h)
		if !hosttest.HasCode(t, err, blocking.FleetEnvelopeInvalid) || !strings.Contains(err.Error(), "release") {
			t.Errorf("%q: %v; want fleet_envelope_invalid naming the release", release, err)
		}
		if r != nil && (r.Copied != nil || r.Admitted) {
			t.Errorf("%q: copied %v, admitted %v; want nothing done", release, r.Copied, r.Admitted)
		}
	}
}
