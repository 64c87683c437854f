package pipeline_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oa-dev/oa/admit"
	"github.com/oa-dev/oa/bind"
	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/sandbox"
	"github.com/oa-dev/oa/examples"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/pipeline"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/schemas"
)

// published publishes the clinic example into a new host folder that
// trusts the keys it was signed and attested with.
func published(t *testing.T) (string, *pipeline.Published) {
	t.Helper()
	ctx := context.Background()
	home := t.TempDir()
	pub, err := pipeline.NewKeys()
	if err != nil {
		t.Fatal(err)
	}
	auth, err := pipeline.NewKeys()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "bundle")
	if err := examples.Write(examples.Default, dir); err != nil {
		t.Fatal(err)
	}
	rel, err := pipeline.Publish(ctx, home, dir, pub.Signer, auth.Signer)
	if err != nil {
		t.Fatal(err)
	}
	if err := host.Init(home, host.InitOptions{Host: "pipeline-host", Publishers: map[string][]byte{"p": pub.Public}, Authorities: map[string][]byte{"a": auth.Public}}); err != nil {
		t.Fatal(err)
	}
	return home, rel
}

// publishedHost is published with the host opened (closed at the end of
// the test).
func publishedHost(t *testing.T) (*host.Host, *pipeline.Published) {
	t.Helper()
	home, rel := published(t)
	h, err := host.Open(context.Background(), home)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h, rel
}

// TestPrepareHostBindsAndNeverOverwritesTheRegistry runs the operator's
// half end to end on a real host, then again: the second run refuses at
// the registry (host_exists) and leaves the signed file as it was.
func TestPrepareHostBindsAndNeverOverwritesTheRegistry(t *testing.T) {
	ctx := context.Background()
	h, rel := publishedHost(t)
	home := h.Home
	var lines []string
	opts := pipeline.HostOptions{
		Release: rel, By: "Op", Now: time.Now(),
		Connections: []pipeline.Connection{{Name: "sandbox", Connector: resolve.SandboxConnector, Config: connector.Config{Command: connector.SandboxCommand}}},
		Connector:   connector.Options{SandboxDir: sandbox.Dir(home)},
		Deployment:  "clinic", Model: "m",
		Progress: func(l string) { lines = append(lines, l) },
	}
	b, err := pipeline.PrepareHost(ctx, h, opts)
	if err != nil {
		t.Fatal(err)
	}
	cur, err := bind.Current(ctx, h, "clinic")
	if err != nil || cur.PlanDigest != b.PlanDigest {
		t.Fatalf("current binding %+v, %v", cur, err)
	}
	// The binding records the release's reference as the CLI reads it
	// under the home, the typed Ref written out.
	if want := "clinic-triage@" + rel.Descriptor.Digest.String(); cur.Reference != want || cur.LayoutPath {
		t.Fatalf("the binding records %q (layout path %v), want %q", cur.Reference, cur.LayoutPath, want)
	}
	if len(lines) != 4 || !strings.Contains(lines[3], "bound to deployment clinic") {
		t.Fatalf("progress %q", lines)
	}
	reg := filepath.Join(home, resolve.RegistryFile)
	before, _ := os.ReadFile(reg)
	if _, err := pipeline.PrepareHost(ctx, h, opts); !blocking.Has(err, blocking.HostExists) {
		t.Fatalf("second run: %v, want host_exists", err)
	}
	if after, _ := os.ReadFile(reg); string(after) != string(before) {
		t.Fatal("the registry was overwritten")
	}
}

// TestPublishedIsTheReleaseTheCLIReads: Publish returns the release typed
// once: its Ref, pinned to the pushed digest, is the reference the oa CLI
// reads under the home, which opens to the same manifest.
func TestPublishedIsTheReleaseTheCLIReads(t *testing.T) {
	home, rel := published(t)
	if want := "clinic-triage@" + rel.Descriptor.Digest.String(); rel.Ref.String() != want {
		t.Fatalf("published as %q, want %q", rel.Ref, want)
	}
	typed, err := oci.ParseRef(rel.Ref.String(), oci.RefOptions{Home: home})
	if err != nil {
		t.Fatal(err)
	}
	if typed != rel.Ref {
		t.Fatalf("the CLI reads %+v, Publish returned %+v", typed, rel.Ref)
	}
	opened, err := oci.OpenPinned(context.Background(), typed, oci.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if opened.Descriptor.Digest != rel.Descriptor.Digest || opened.Descriptor.Size != rel.Descriptor.Size {
		t.Fatalf("the reference opens %v, Publish pushed %v", opened.Descriptor, rel.Descriptor)
	}
}

// TestPullWritesOnlyItsOwnFolder: Pull writes the layers and its marker,
// replaces its own earlier output, and refuses any other non-empty folder
// without changing it.
func TestPullWritesOnlyItsOwnFolder(t *testing.T) {
	ctx := context.Background()
	_, rel := published(t)
	art, err := oci.Fetch(ctx, rel.Target, rel.Descriptor, schemas.CheckFetchedIR)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	names, err := pipeline.Pull(out, art)
	if err != nil || !slices.Contains(names, "worker.ir.json") {
		t.Fatalf("names %v, %v", names, err)
	}
	if _, err := os.Stat(filepath.Join(out, pipeline.PullMarker)); err != nil {
		t.Fatal("no marker")
	}
	if _, err := pipeline.Pull(out, art); err != nil {
		t.Fatalf("replacing its own output: %v", err)
	}
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "keep"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := pipeline.Pull(other, art); !blocking.Has(err, blocking.PullOutputNotOwned) {
		t.Fatalf("foreign folder: %v", err)
	}
	if l, _ := os.ReadDir(other); len(l) != 1 {
		t.Fatalf("foreign folder changed: %v", l)
	}
}

// TestResolveAndBindGate: bind.ResolveAndBind as PrepareHost and fleet
// provisioning call it, on a published release. A Gate is asked with the resolved plan before
// anything is bound. Its refusal is returned as is and its "no" binds
// nothing; in both cases the deployment keeps the binding it had, and a
// "yes" binds the plan it was shown.
func TestResolveAndBindGate(t *testing.T) {
	ctx := context.Background()
	h, rel := publishedHost(t)
	home := h.Home
	now := time.Now()
	if _, _, err := admit.Admit(ctx, h, &rel.Release, admit.AdmitOptions{AdmittedBy: "Op", Now: now}); err != nil {
		t.Fatal(err)
	}
	opts := pipeline.HostOptions{
		By: "Op", Now: now,
		Connections: []pipeline.Connection{{Name: "sandbox", Connector: resolve.SandboxConnector, Config: connector.Config{Command: connector.SandboxCommand}}},
		Connector:   connector.Options{SandboxDir: sandbox.Dir(home)},
	}
	if err := pipeline.SetUpHost(ctx, h, opts); err != nil {
		t.Fatal(err)
	}
	req := rel.BindRequest("clinic", "m", "Op", now, opts.Connector)

	var shown string
	req.Gate = func(_ context.Context, plan *resolve.Plan) (bool, error) {
		shown = plan.Digest()
		return false, blocking.New(blocking.FleetCeilingExceeded, "outside the ceiling")
	}
	if b, err := bind.ResolveAndBind(ctx, h, req); b != nil || !blocking.Has(err, blocking.FleetCeilingExceeded) {
		t.Fatalf("gate refusal: binding %v, error %v; want the gate's fleet_ceiling_exceeded", b, err)
	}
	if shown == "" {
		t.Fatal("the gate was not shown the plan")
	}
	if _, err := bind.Current(ctx, h, "clinic"); err == nil {
		t.Fatal("a refused gate left a binding")
	}

	req.Gate = func(context.Context, *resolve.Plan) (bool, error) { return false, nil }
	if b, err := bind.ResolveAndBind(ctx, h, req); b != nil || err != nil {
		t.Fatalf("gate no: binding %v, error %v; want neither", b, err)
	}
	if _, err := bind.Current(ctx, h, "clinic"); err == nil {
		t.Fatal("a gate that said no left a binding")
	}

	req.Gate = func(_ context.Context, plan *resolve.Plan) (bool, error) { shown = plan.Digest(); return true, nil }
	b, err := bind.ResolveAndBind(ctx, h, req)
	if err != nil {
		t.Fatal(err)
	}
	if cur, err := bind.Current(ctx, h, "clinic"); err != nil || cur.PlanDigest != shown || b.PlanDigest != shown {
		t.Fatalf("gate yes: bound %v (%v), gate shown %s", cur, err, shown)
	}
}
