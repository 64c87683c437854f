package coordinator_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oa-dev/oa/admit"
	"github.com/oa-dev/oa/audit"
	"github.com/oa-dev/oa/compiler"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/examples"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/pipeline"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/coordtest"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// bigIRBytes is how large the test release's Worker IR is made: over the
// default IR limit (oci.DefaultIRBytes).
const bigIRBytes = oci.DefaultIRBytes + 1<<20

// TestRaisedLimitsReachTheCoordinator: a host whose policy raises
// limits.ir_bytes admits and binds a release whose Worker IR is over the
// default limit; the coordinator of that host opens it too, and audit
// export copies it (each reads the release under the host's limits,
// host.Policy.ReleaseOptions, not the defaults).
func TestRaisedLimitsReachTheCoordinator(t *testing.T) {
	ctx := context.Background()
	h := bigIRHost(t)
	opened := h.Open()
	h.WriteRegistry(resolve.StarterRegistry(hosttest.Name))
	h.AddConnection(opened, "sandbox", resolve.SandboxConnector, hosttest.Sandbox)
	h.Bind(opened, "claude-test")
	c, err := coordinator.Open(ctx, coordinator.Options{Home: h.Home, Deployment: "clinic", EffectTimeout: 2 * time.Second, Operator: coordtest.Log{T: t}})
	if err != nil {
		t.Fatalf("the coordinator refuses a release its host admitted and bound: %v", err)
	}
	c.Close()
	if _, err := audit.Export(ctx, audit.ExportOptions{Home: h.Home, Deployment: "clinic", Now: h.Now}, io.Discard); err != nil {
		t.Fatalf("audit export refuses a release its host admitted and bound: %v", err)
	}
}

// bigIRHost is a test host whose policy raises limits.ir_bytes to 16 MiB
// and which admitted the clinic example with a persona that makes its
// Worker IR larger than the default limit, read as the oa CLI reads it:
// under the host's limits.
func bigIRHost(t *testing.T) *hosttest.Host {
	t.Helper()
	ctx := context.Background()
	publisher, authority := hosttest.SharedKeys(t)
	h := &hosttest.Host{T: t, Home: t.TempDir(), Now: time.Now().UTC().Truncate(time.Second), PublisherPub: publisher.Public, AuthorityPub: authority.Public}
	if err := host.Init(h.Home, host.InitOptions{Host: hosttest.Name, Publishers: map[string][]byte{"publisher": publisher.Public}, Authorities: map[string][]byte{"authority": authority.Public}, HostKey: hosttest.PoolKey(t)}); err != nil {
		t.Fatal(err)
	}
	hosttest.GiveReceiptKey(t, h.Home)
	policy := filepath.Join(h.Home, host.PolicyFile)
	f, err := os.OpenFile(policy, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("\nlimits: ir_bytes: 16777216\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "bundle")
	if err := examples.Write(examples.Default, dir); err != nil {
		t.Fatal(err)
	}
	// A bundle holds at most 4 MiB (compiler.MaxBundleBytes) and a prose
	// field 4096 runes: the IR grows past the default limit by optional
	// inputs that share one description.
	var pad strings.Builder
	fmt.Fprintf(&pad, "package worker\n\n_pad: %q\n\njobs: append_triage_note: inputs: {\n", strings.Repeat("Padding. ", 4000/9))
	for i := range bigIRBytes/4000 + 1 {
		fmt.Fprintf(&pad, "\tpad_%d: {type: \"string\", description: _pad, optional: true}\n", i)
	}
	pad.WriteString("}\n")
	if err := os.WriteFile(filepath.Join(dir, "pad.cue"), []byte(pad.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	opened := h.Open()
	ref, err := oci.ParseRef("clinic-triage", oci.RefOptions{Home: h.Home})
	if err != nil {
		t.Fatal(err)
	}
	target, err := oci.Open(ctx, ref, oci.OpenOptions{Create: true, Limits: opened.Policy.ReadLimits()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := compiler.Compile(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.IR) <= oci.DefaultIRBytes {
		t.Fatalf("the Worker IR is %d bytes, not over the default limit", len(res.IR))
	}
	rel, err := pipeline.PublishTo(ctx, target, ref, res, publisher.Signer, authority.Signer)
	if err != nil {
		t.Fatal(err)
	}
	h.Ref, h.Release = "clinic-triage@"+rel.Descriptor.Digest.String(), &rel.Release
	if _, _, err := admit.Admit(ctx, opened, h.Release, admit.AdmitOptions{AdmittedBy: "Test Operator", Now: h.Now}); err != nil {
		t.Fatal(err)
	}
	return h
}
