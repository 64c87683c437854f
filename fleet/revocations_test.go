package fleet_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	_ "modernc.org/sqlite"

	"github.com/oa-dev/oa/admit"
	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/fleet"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/testkit/fleettest"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// revokedHere reports whether digest is revoked in the host store of h.
func revokedHere(t *testing.T, h *fleettest.Host, digest string) bool {
	t.Helper()
	opened, err := host.Open(context.Background(), h.Home)
	if err != nil {
		t.Fatal(err)
	}
	defer opened.Close()
	s, err := admit.StatusOf(context.Background(), opened, digest, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return s.State == admit.Revoked
}

// TestRevocationsApplyWithoutEnvelope: a missing, junk or foreign envelope
// is refused, but only after the fleet's revocation list is applied.
func TestRevocationsApplyWithoutEnvelope(t *testing.T) {
	ctx := context.Background()
	f := fleettest.New(t)
	spec, err := fleet.LoadSpec(f.WriteSpec(f.Spec(f.Release, []string{"h09"}, "")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fleet.Publish(ctx, spec, f.Key.Signer, fleet.Options{}); err != nil {
		t.Fatal(err)
	}
	d, _ := oci.ParseDigest(f.Desc.Digest.String())
	if _, _, err := fleet.PublishRevocation(ctx, spec, f.Key.Signer, d, "recall", "Auditor", time.Now(), fleet.RevocationOptions{}); err != nil {
		t.Fatal(err)
	}
	missing := f.NewHost("h01", fleettest.HostOptions{PreApprove: true})
	if _, err := provision(t, f, missing); !hosttest.HasCode(t, err, blocking.FleetEnvelopeMissing) {
		t.Fatalf("no envelope: %v", err)
	}
	junk := f.NewHost("h02", fleettest.HostOptions{PreApprove: true})
	if err := fleet.PushSigned(ctx, f.Repository, fleet.RevocationsArtifactType, fleet.EnvelopeTag("h02"), map[string]string{"type": "junk"}, f.Key.Signer); err != nil {
		t.Fatal(err)
	}
	if _, err := provision(t, f, junk); !hosttest.HasCode(t, err, blocking.FleetEnvelopeInvalid) {
		t.Fatalf("junk envelope: %v", err)
	}
	wrong := f.NewHost("h03", fleettest.HostOptions{PreApprove: true})
	_, err = fleet.Provision(ctx, wrong.Home, f.Repository+":"+fleet.EnvelopeTag("h09"), fleet.ProvisionOptions{Now: time.Now()})
	if !hosttest.HasCode(t, err, blocking.FleetEnvelopeWrongHost) {
		t.Fatalf("wrong host: %v", err)
	}
	for _, h := range []*fleettest.Host{missing, junk, wrong} {
		if !revokedHere(t, h, d.String()) {
			t.Fatalf("%s: the revocation list was not applied", h.ID)
		}
	}
}

// TestRevocationsRollbackRefused: once a host applied list #N, an older
// list or no list at all is refused; the status reports the list's
// sequence.
func TestRevocationsRollbackRefused(t *testing.T) {
	ctx := context.Background()
	f := fleettest.New(t)
	h := f.NewHost("h01", fleettest.HostOptions{PreApprove: true})
	spec := f.LoadSpec("h01")
	if _, err := fleet.Publish(ctx, spec, f.Key.Signer, fleet.Options{}); err != nil {
		t.Fatal(err)
	}
	other := digest.FromString("other")
	first, _, err := fleet.PublishRevocation(ctx, spec, f.Key.Signer, other, "recall", "Auditor", time.Now(), fleet.RevocationOptions{})
	if err != nil {
		t.Fatal(err)
	}
	older := *first
	older.Revoked = append([]fleet.RevokedDigest(nil), first.Revoked...)
	second, _, err := fleet.PublishRevocation(ctx, spec, f.Key.Signer, digest.FromString("another"), "recall", "Auditor", time.Now(), fleet.RevocationOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := provision(t, f, h)
	if err != nil || r.Status.State != fleet.Bound || r.Status.RevocationsSeq != second.Seq {
		t.Fatalf("%v %+v", err, r)
	}
	// The registry goes back to list #1.
	if err := fleet.PushSigned(ctx, f.Repository, fleet.RevocationsArtifactType, fleet.RevocationsTag, &older, f.Key.Signer); err != nil {
		t.Fatal(err)
	}
	if _, err := provision(t, f, h); !hosttest.HasCode(t, err, blocking.FleetRevocationsRollback) {
		t.Fatalf("older list: %v", err)
	}
	// Another repository of the same fleet with no list at all.
	f.Repository += "-restored"
	spec2, err := fleet.LoadSpec(f.WriteSpec(f.Spec(f.Release, []string{"h01"}, "")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fleet.Publish(ctx, spec2, f.Key.Signer, fleet.Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := provision(t, f, h); !hosttest.HasCode(t, err, blocking.FleetRevocationsRollback) {
		t.Fatalf("missing list: %v", err)
	}
}

// TestPublishRevocationRefusesDamagedList: a junk, foreign-fleet or
// foreign-key list is never silently replaced; --reset-revocations starts a
// new list numbered above the old one.
func TestPublishRevocationRefusesDamagedList(t *testing.T) {
	ctx := context.Background()
	f := fleettest.New(t)
	spec := f.LoadSpec("h01")
	d := digest.FromString("recalled")
	otherKey := fleettest.OtherKey(t)
	for _, c := range []struct {
		name string
		push func() error
		want blocking.Code
	}{
		{"junk", func() error {
			return fleet.PushSigned(ctx, f.Repository, fleet.EnvelopeArtifactType, fleet.RevocationsTag, map[string]string{"type": "junk"}, f.Key.Signer)
		}, blocking.FleetRevocationsUnverified},
		{"undecodable", func() error {
			return fleet.PushSigned(ctx, f.Repository, fleet.RevocationsArtifactType, fleet.RevocationsTag, map[string]string{"type": "junk"}, f.Key.Signer)
		}, blocking.FleetRevocationsUnverified},
		{"another fleet", func() error {
			return fleet.PushSigned(ctx, f.Repository, fleet.RevocationsArtifactType, fleet.RevocationsTag, &fleet.Revocations{Type: fleet.RevocationsType, Fleet: "elsewhere", Seq: 7, Revoked: []fleet.RevokedDigest{}}, f.Key.Signer)
		}, blocking.FleetRevocationsUnverified},
		{"another key", func() error {
			return fleet.PushSigned(ctx, f.Repository, fleet.RevocationsArtifactType, fleet.RevocationsTag, &fleet.Revocations{Type: fleet.RevocationsType, Fleet: "clinics", Seq: 3, Revoked: []fleet.RevokedDigest{}}, otherKey.Signer)
		}, blocking.FleetKeyMismatch},
	} {
		if err := c.push(); err != nil {
			t.Fatal(err)
		}
		if _, _, err := fleet.PublishRevocation(ctx, spec, f.Key.Signer, d, "recall", "Auditor", time.Now(), fleet.RevocationOptions{}); !hosttest.HasCode(t, err, c.want) {
			t.Fatalf("%s: %v, want %s", c.name, err, c.want)
		}
	}
	start := time.Now()
	list, changed, err := fleet.PublishRevocation(ctx, spec, f.Key.Signer, d, "recall", "Auditor", start, fleet.RevocationOptions{Reset: true})
	if err != nil || !changed || len(list.Revoked) != 1 || list.Seq < start.Unix() {
		t.Fatalf("reset: %v %v %+v", err, changed, list)
	}
	// The new list continues normally.
	next, changed, err := fleet.PublishRevocation(ctx, spec, f.Key.Signer, digest.FromString("next"), "recall", "Auditor", time.Now(), fleet.RevocationOptions{})
	if err != nil || !changed || next.Seq != list.Seq+1 || len(next.Revoked) != 2 {
		t.Fatalf("after reset: %v %v %+v", err, changed, next)
	}
}

// TestPublishRegistryDown: a registry outage is registry_unreachable,
// located at the release that could not be read, and nothing is written.
func TestPublishRegistryDown(t *testing.T) {
	ctx := context.Background()
	f := fleettest.New(t)
	spec := f.LoadSpec("h01")
	f.Registry.Down()
	defer f.Registry.Up(t)
	pubs, err := fleet.Publish(ctx, spec, f.Key.Signer, fleet.Options{})
	if !hosttest.HasCode(t, err, blocking.RegistryUnreachable) || pubs != nil {
		t.Fatalf("got %v %+v, want registry_unreachable", err, pubs)
	}
}

// TestProvisionReleaseMissing: a release the registry does not have is a
// refusal (artifact_not_found) reported in the status, not a fault.
func TestProvisionReleaseMissing(t *testing.T) {
	ctx := context.Background()
	f := fleettest.New(t)
	h := f.NewHost("h01", fleettest.HostOptions{PreApprove: true})
	missing := digest.FromString("no such release").String()
	env := &fleet.Envelope{
		Type: fleet.EnvelopeType, Fleet: "clinics", Host: "h01", Seq: 1, Deployment: "clinic",
		Release: f.Registry.Host() + "/oa/clinic-triage@" + missing, ArtifactDigest: missing,
		WorkerIRDigest: missing, Package: "clinic-triage", Version: "1.2.0", Model: "demo-model",
		Ceiling:  fleet.Ceiling{Capabilities: []string{}, MaxRisk: ir.ReadOnly},
		IssuedAt: time.Now().UTC().Truncate(time.Second), ExpiresAt: time.Now().UTC().Truncate(time.Second).Add(time.Hour),
	}
	if err := fleet.PushSigned(ctx, f.Repository, fleet.EnvelopeArtifactType, fleet.EnvelopeTag("h01"), env, f.Key.Signer); err != nil {
		t.Fatal(err)
	}
	r, err := provision(t, f, h)
	if !hosttest.HasCode(t, err, blocking.ArtifactNotFound) || r == nil || r.Status.State != fleet.Refused {
		t.Fatalf("%v %+v", err, r)
	}
}

// TestTamperedAppliedRecord: an applied-envelope record that does not
// verify with the host key is a refusal with its own code.
func TestTamperedAppliedRecord(t *testing.T) {
	ctx := context.Background()
	f := fleettest.New(t)
	h := f.NewHost("h01", fleettest.HostOptions{PreApprove: true})
	spec := f.LoadSpec("h01")
	if _, err := fleet.Publish(ctx, spec, f.Key.Signer, fleet.Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := provision(t, f, h); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", filepath.Join(h.Home, host.StateFile))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`DROP TRIGGER versions_no_update`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE versions SET record = CAST(replace(CAST(record AS TEXT), '"host":"h01"', '"host":"h02"') AS BLOB) WHERE kind = 'fleet_envelope'`); err != nil {
		t.Fatal(err)
	}
	if _, err := provision(t, f, h); !hosttest.HasCode(t, err, blocking.FleetRecordUnverified) {
		t.Fatalf("tampered record: %v", err)
	}
}

// TestEnvelopeSeqNeverGoesBack: when a host's envelope tag is lost or
// overwritten with junk, the next envelope still has a sequence above the
// one the host applied.
func TestEnvelopeSeqNeverGoesBack(t *testing.T) {
	ctx := context.Background()
	f := fleettest.New(t)
	h := f.NewHost("h01", fleettest.HostOptions{PreApprove: true})
	src := f.Spec(f.Release, []string{"h01"}, "")
	publish := func(src string) []fleet.Published {
		t.Helper()
		spec, err := fleet.LoadSpec(f.WriteSpec(src))
		if err != nil {
			t.Fatal(err)
		}
		pubs, err := fleet.Publish(ctx, spec, f.Key.Signer, fleet.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return pubs
	}
	publish(src)
	second := publish(strings.Replace(src, `model: "demo-model"`, `model: "demo-model-2"`, 1))
	if r, err := provision(t, f, h); err != nil || r.Status.EnvelopeSeq != second[0].Seq {
		t.Fatalf("%v %+v", err, r)
	}
	if err := fleet.PushSigned(ctx, f.Repository, fleet.RevocationsArtifactType, fleet.EnvelopeTag("h01"), map[string]string{"type": "junk"}, f.Key.Signer); err != nil {
		t.Fatal(err)
	}
	// The next second, so the sequence cannot tie with the one applied.
	time.Sleep(time.Until(time.Unix(second[0].Seq+1, 0)))
	third := publish(src)
	if third[0].Seq <= second[0].Seq {
		t.Fatalf("seq %d after %d", third[0].Seq, second[0].Seq)
	}
	if r, err := provision(t, f, h); err != nil || r.Status.EnvelopeSeq != third[0].Seq {
		t.Fatalf("after the lost tag: %v %+v", err, r)
	}
}
