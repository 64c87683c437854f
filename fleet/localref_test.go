package fleet_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/oa-dev/oa/bind"
	"github.com/oa-dev/oa/fleet"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/testkit/fleettest"
)

// TestProvisionDottedRepository: a release whose repository's first part
// reads like a registry host (oa.dev, as in ghcr.io/oa.dev/clinic) is
// still copied into the host's own layout folder under $OA_HOME/oci, named
// by the whole repository, then admitted and bound; the reference the
// binding records reads back as that same folder, never as a registry.
func TestProvisionDottedRepository(t *testing.T) {
	ctx := context.Background()
	f := fleettest.New(t)
	release := copyRelease(t, f, "oa.dev/clinic")
	h := f.NewHost("h01", fleettest.HostOptions{PreApprove: true})
	spec, err := fleet.LoadSpec(f.WriteSpec(f.Spec(release, []string{"h01"}, "")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fleet.Publish(ctx, spec, f.Key.Signer, fleet.Options{}); err != nil {
		t.Fatal(err)
	}
	r, err := provision(t, f, h)
	if err != nil || r.Status.State != fleet.Bound || !r.Admitted || !r.Bound || len(r.Copied) != 3 {
		t.Fatalf("provision: %v %+v", err, r)
	}
	layout := filepath.Join(h.Home, "oci", "oa.dev", "clinic")
	if _, err := os.Stat(filepath.Join(layout, "oci-layout")); err != nil {
		t.Fatalf("the release is not in the host's layout folder %s: %v", layout, err)
	}
	opened, err := host.Open(ctx, h.Home)
	if err != nil {
		t.Fatal(err)
	}
	defer opened.Close()
	b, err := bind.Current(ctx, opened, "clinic")
	if err != nil {
		t.Fatal(err)
	}
	recorded, err := oci.ParseRef(b.Reference, oci.RefOptions{Home: h.Home, Layout: b.LayoutPath})
	if err != nil || recorded.Registry != "" || recorded.Layout != layout || recorded.Digest != f.Desc.Digest {
		t.Fatalf("the binding records %q (layout path %v), read as %+v, %v; want the layout %s at %s", b.Reference, b.LayoutPath, recorded, err, layout, f.Desc.Digest)
	}
	if r.LocalRef != b.Reference {
		t.Errorf("LocalRef %q, the binding records %q", r.LocalRef, b.Reference)
	}
	again, err := provision(t, f, h)
	if err != nil || again.Status.State != fleet.Bound || len(again.Copied) != 0 {
		t.Fatalf("provision again: %v %+v", err, again)
	}
}

// copyRelease copies the fleet's release, with its signature and
// attestation, to repo in the fleet's registry and returns its digest
// reference there.
func copyRelease(t *testing.T, f *fleettest.Fleet, repo string) string {
	t.Helper()
	ctx := context.Background()
	from, err := oci.ParseRef(f.Release, oci.RefOptions{})
	if err != nil {
		t.Fatal(err)
	}
	to, err := oci.ParseRef(f.Registry.Host()+"/"+repo+"@"+f.Desc.Digest.String(), oci.RefOptions{})
	if err != nil {
		t.Fatal(err)
	}
	src, err := oci.Open(ctx, from, oci.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dst, err := oci.Open(ctx, to, oci.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := oci.Copy(ctx, src, dst, f.Desc, ""); err != nil {
		t.Fatal(err)
	}
	return to.String()
}
