package fleet_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oa-dev/oa/admit"
	"github.com/oa-dev/oa/bind"
	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/sandbox"
	"github.com/oa-dev/oa/fleet"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/fleettest"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// approve does what the person does on a host that waits: admits the
// release at localRef unless it is active, and binds it.
func approve(t *testing.T, fh *fleettest.Host, localRef string) {
	t.Helper()
	ctx := context.Background()
	h, err := host.Open(ctx, fh.Home)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	rel := localRelease(t, fh, localRef)
	if s, err := admit.StatusOf(ctx, h, rel.Descriptor.Digest.String(), time.Now()); err != nil || s.State != admit.Active {
		if _, _, err := admit.Admit(ctx, h, rel, admit.AdmitOptions{AdmittedBy: fleettest.Operator, Now: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	plan, _, err := resolve.Compute(ctx, h, rel, resolve.Request{Deployment: "clinic", Model: "demo-model"}, resolve.ComputeOptions{Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bind.Bind(ctx, h, localRef, false, plan, bind.Approval{By: fleettest.Operator, Approved: true, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
}

// localRelease opens the release localRef names in fh's layout.
func localRelease(t *testing.T, fh *fleettest.Host, localRef string) *oci.Release {
	t.Helper()
	ref, err := oci.ParseRef(localRef, oci.RefOptions{Home: fh.Home})
	if err != nil {
		t.Fatal(err)
	}
	rel, err := oci.OpenPinned(context.Background(), ref, oci.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return rel
}

// TestNewReleaseKeepsTheBoundOneServed: a host whose policy refuses fleet
// pre-approval, running a bound v1, receives an envelope for v2. v2 is not
// admitted (the person does that), so v1 stays actively admitted and its
// binding approved.
func TestNewReleaseKeepsTheBoundOneServed(t *testing.T) {
	ctx := context.Background()
	f := fleettest.New(t)
	fh := f.NewHost("h01", fleettest.HostOptions{})
	spec := f.LoadSpec("h01")
	if _, err := fleet.Publish(ctx, spec, f.Key.Signer, fleet.Options{}); err != nil {
		t.Fatal(err)
	}
	r, err := provision(t, f, fh)
	if !hosttest.HasCode(t, err, blocking.AwaitingApproval) || r.Status.State != fleet.AwaitingApproval {
		t.Fatalf("v1: %v %+v", err, r)
	}
	approve(t, fh, r.LocalRef)
	v1Ref := r.LocalRef
	if r, err = provision(t, f, fh); err != nil || r.Status.State != fleet.Bound {
		t.Fatalf("v1 approved: %v %+v", err, r)
	}

	v2, _ := f.Publish(func(dir string) {
		p := filepath.Join(dir, "worker.cue")
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.Replace(string(b), `version:  "1.2.0"`, `version:  "1.3.0"`, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	spec2, err := fleet.LoadSpec(f.WriteSpec(f.Spec(v2, []string{"h01"}, "")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fleet.Publish(ctx, spec2, f.Key.Signer, fleet.Options{}); err != nil {
		t.Fatal(err)
	}
	r, err = provision(t, f, fh)
	if !hosttest.HasCode(t, err, blocking.AwaitingApproval) || r.Status.State != fleet.AwaitingApproval || r.Admitted || !r.NeedsAdmission {
		t.Fatalf("v2: %v %+v", err, r)
	}

	// v1 is still active, and its binding still what the host serves.
	h, err := host.Open(ctx, fh.Home)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	rel := localRelease(t, fh, v1Ref)
	if s, err := admit.StatusOf(ctx, h, rel.Descriptor.Digest.String(), time.Now()); err != nil || s.State != admit.Active {
		t.Fatalf("v1 after the v2 envelope: %v %+v", err, s)
	}
	b, err := bind.Current(ctx, h, "clinic")
	if err != nil {
		t.Fatal(err)
	}
	plan, _, err := resolve.Compute(ctx, h, rel, resolve.Request{Deployment: "clinic", Model: "demo-model"}, resolve.ComputeOptions{Now: time.Now(), Probe: true, Connector: connector.Options{SandboxDir: sandbox.Dir(fh.Home)}})
	if rep := bind.Compare(b, plan, err); !rep.Approved {
		t.Fatalf("v1's binding is no longer approved: %+v", rep)
	}
	h.Close()

	// The person admits and binds v2; the next sync reports it bound.
	approve(t, fh, r.LocalRef)
	if r, err = provision(t, f, fh); err != nil || r.Status.State != fleet.Bound || r.Status.Release != desc2(t, v2) {
		t.Fatalf("v2 approved: %v %+v", err, r)
	}
}

func desc2(t *testing.T, ref string) string {
	t.Helper()
	r, err := oci.ParseRef(ref, oci.RefOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return r.Digest.String()
}

// TestFleetNeverRebindsAPersonsBinding: on a host whose policy lets the
// fleet pre-approve, a deployment a person bound is not rebound (nor its
// release's admission replaced) by a new envelope: the host waits for the
// person, and the release they bound stays active.
func TestFleetNeverRebindsAPersonsBinding(t *testing.T) {
	ctx := context.Background()
	f := fleettest.New(t)
	fh := f.NewHost("h01", fleettest.HostOptions{PreApprove: true})
	spec := f.LoadSpec("h01")
	if _, err := fleet.Publish(ctx, spec, f.Key.Signer, fleet.Options{}); err != nil {
		t.Fatal(err)
	}
	r, err := provision(t, f, fh)
	if err != nil || r.Status.State != fleet.Bound {
		t.Fatalf("v1 pre-approved: %v %+v", err, r)
	}
	// The person takes the deployment over: their own binding of v1.
	h, err := host.Open(ctx, fh.Home)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	rel := localRelease(t, fh, r.LocalRef)
	plan, _, err := resolve.Compute(ctx, h, rel, resolve.Request{Deployment: "clinic", Model: "demo-model"}, resolve.ComputeOptions{Now: time.Now(), Probe: true, Connector: connector.Options{SandboxDir: sandbox.Dir(fh.Home)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bind.Bind(ctx, h, r.LocalRef, false, plan, bind.Approval{By: fleettest.Operator, Approved: true, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	v2, _ := f.Publish(func(dir string) {
		p := filepath.Join(dir, "worker.cue")
		b, _ := os.ReadFile(p)
		os.WriteFile(p, []byte(strings.Replace(string(b), `version:  "1.2.0"`, `version:  "1.3.0"`, 1)), 0o644)
	})
	spec2, err := fleet.LoadSpec(f.WriteSpec(f.Spec(v2, []string{"h01"}, "")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fleet.Publish(ctx, spec2, f.Key.Signer, fleet.Options{}); err != nil {
		t.Fatal(err)
	}
	r2, err := provision(t, f, fh)
	if !hosttest.HasCode(t, err, blocking.AwaitingApproval) || r2.Admitted || r2.Bound {
		t.Fatalf("v2 over a person's binding: %v %+v", err, r2)
	}
	if s, err := admit.StatusOf(ctx, h, rel.Descriptor.Digest.String(), time.Now()); err != nil || s.State != admit.Active {
		t.Fatalf("v1 after the v2 envelope: %v %+v", err, s)
	}
	if b, err := bind.Current(ctx, h, "clinic"); err != nil || b.ApprovedBy != fleettest.Operator || b.ArtifactDigest != rel.Descriptor.Digest.String() {
		t.Fatalf("the person's binding was replaced: %+v %v", b, err)
	}
}
