package coordinator_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oa-dev/oa/admit"
	"github.com/oa-dev/oa/bind"
	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/coordtest"
	"github.com/oa-dev/oa/testkit/hosttest"
	"github.com/oa-dev/oa/testkit/registrytest"
	"github.com/oa-dev/oa/testkit/servetest"
)

// registryBound is the clinic deployment bound to its release in a real
// registry (the release copied there with its signatures and
// attestations), on the sandbox connector. With keep, it is bound as
// oa bind binds (bind.ResolveAndBind, the release kept in the host's
// release store); without, as a binding made before the store existed
// (bind.Bind). The layout the release was published into is removed, so
// the registry and the store are the only places it can come from.
func registryBound(t *testing.T, keep bool) (*hosttest.Host, *registrytest.Registry) {
	t.Helper()
	ctx := context.Background()
	reg := registrytest.Start(t)
	h := hosttest.New(t, nil)
	h.WriteRegistry(resolve.StarterRegistry(hosttest.Name))
	opened := h.Open()
	h.AddConnection(opened, "sandbox", resolve.SandboxConnector, hosttest.Sandbox)
	ref, err := oci.ParseRef(reg.Host()+"/oa/clinic-triage@"+h.Release.Descriptor.Digest.String(), oci.RefOptions{Home: h.Home})
	if err != nil {
		t.Fatal(err)
	}
	remote, err := oci.Open(ctx, ref, oci.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := oci.Copy(ctx, h.Release.Target, remote, h.Release.Descriptor, ""); err != nil {
		t.Fatal(err)
	}
	rel := &oci.Release{Ref: ref, Target: remote, Descriptor: h.Release.Descriptor}
	req := bind.Request{Release: rel, Deployment: "clinic", Model: "claude-test", By: "Dr Ada", Now: h.Now}
	if keep {
		if _, err := bind.ResolveAndBind(ctx, opened, req); err != nil {
			t.Fatal(err)
		}
	} else {
		plan, _, err := resolve.Compute(ctx, opened, rel, resolve.Request{Deployment: "clinic", Model: "claude-test"}, resolve.ComputeOptions{Now: h.Now})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := bind.Bind(ctx, opened, ref.String(), false, plan, bind.Approval{By: "Dr Ada", Approved: true, Now: h.Now}); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.RemoveAll(filepath.Join(h.Home, "oci")); err != nil {
		t.Fatal(err)
	}
	return h, reg
}

// runClinic runs the clinic workflow once on a coordinator opened on home
// and wants it done.
func runClinic(t *testing.T, c *coordinator.Coordinator, requestID string) {
	t.Helper()
	res, err := c.Run(context.Background(), coordinator.RunRequest{Workflow: "append_triage_note", Inputs: coordtest.Inputs("AB-1234"), RequestID: requestID, Wait: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != contract.OutcomeDone {
		t.Fatalf("outcome %s/%s, want done", res.Outcome, res.Reason)
	}
}

// openRelease opens the deployment's bound release as the coordinator
// does.
func openRelease(t *testing.T, h *hosttest.Host) (*bind.BoundRelease, error) {
	t.Helper()
	opened := h.Open()
	b, err := bind.Current(context.Background(), opened, "clinic")
	if err != nil {
		t.Fatal(err)
	}
	return bind.OpenRelease(context.Background(), opened, b, oci.OpenOptions{})
}

// TestServesWithRegistryDown: a deployment bound while its registry was
// up is served with the registry down, from the host's release store, and
// its run ends done; the store holds the signature and attestations the
// chain check reads, so that checks with no network too.
func TestServesWithRegistryDown(t *testing.T) {
	h, reg := registryBound(t, true)
	reg.Down()
	c := coordtest.Open(t, h.Home)
	runClinic(t, c, "offline-1")
	rel, err := openRelease(t, h)
	if err != nil {
		t.Fatalf("OpenRelease with the registry down: %v", err)
	}
	if !rel.FromStore {
		t.Fatal("OpenRelease with the registry down: not read from the store")
	}
	in, err := admit.IntegrityOf(context.Background(), h.Open(), &rel.Release, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range in.Links {
		if l.Refusal != nil {
			t.Errorf("link %s from the store: %v", l.Name, l.Refusal)
		}
	}
}

// TestServeSubprocessWithRegistryDown: `oa coordinator serve`, a real
// subprocess, serves the deployment with its registry down, where it
// refused registry_unreachable and the client saw the connection close.
func TestServeSubprocessWithRegistryDown(t *testing.T) {
	if testing.Short() {
		t.Skip("builds oa and runs it as a subprocess")
	}
	oa := servetest.Binary(t)
	h, reg := registryBound(t, true)
	reg.Down()
	client := (&servetest.Host{Host: h, OA: oa}).Connect(t, servetest.ClientOptions{})
	res := client.Run("offline-serve-1", servetest.Triage("AB-1234", "Persistent cough, three days."))
	servetest.Want(t, "run with the registry down", res, contract.OutcomeDone, contract.ReasonVerified)
}

// TestTamperedStoreRefetched: a kept blob changed on disk is refused (its
// digest), the release is read from the registry instead and the store
// repaired, so the next start serves with the registry down; changed
// again with the registry down, the start is release_unavailable, naming
// the damaged store and the unreachable registry.
func TestTamperedStoreRefetched(t *testing.T) {
	h, reg := registryBound(t, true)
	tamperStoreIR(t, h.Home)
	var operator servetest.Buffer
	c, err := coordinator.Open(context.Background(), coordinator.Options{Home: h.Home, Deployment: "clinic", Operator: &operator})
	if err != nil {
		t.Fatal(err)
	}
	runClinic(t, c, "repaired-1")
	c.Close()
	if got := operator.String(); !strings.Contains(got, string(blocking.ReleaseStoreDamaged)) {
		t.Fatalf("operator was told %q, want the damaged store named (%s)", got, blocking.ReleaseStoreDamaged)
	}
	if got := operator.String(); !strings.Contains(got, "the store holds it again") {
		t.Fatalf("operator was told %q, want the store's repair named", got)
	}

	reg.Down()
	rel, err := openRelease(t, h)
	if err != nil {
		t.Fatalf("after the repair, with the registry down: %v", err)
	}
	if !rel.FromStore {
		t.Fatal("after the repair, with the registry down: not read from the store")
	}
	runClinic(t, coordtest.Open(t, h.Home), "repaired-2")

	tamperStoreIR(t, h.Home)
	_, err = coordinator.Open(context.Background(), coordinator.Options{Home: h.Home, Deployment: "clinic"})
	for _, code := range []blocking.Code{blocking.ReleaseUnavailable, blocking.ReleaseStoreDamaged, blocking.LayerDigestMismatch, blocking.RegistryUnreachable} {
		if !hosttest.HasCode(t, err, code) {
			t.Errorf("open with a damaged store and no registry: %v, want %s", err, code)
		}
	}
	if codes := hosttest.Codes(t, err); len(codes) == 0 || codes[0] != blocking.ReleaseUnavailable {
		t.Errorf("first refusal %v, want %s", codes, blocking.ReleaseUnavailable)
	}
}

// TestBindingBeforeStoreFillsIt: a binding made before the store existed
// is served from the registry once, which fills the store; then it
// serves with the registry down.
func TestBindingBeforeStoreFillsIt(t *testing.T) {
	h, reg := registryBound(t, false)
	rel, err := openRelease(t, h)
	if err != nil {
		t.Fatalf("first read: %v", err)
	}
	if rel.FromStore {
		t.Fatal("first read: from the store, want from the registry")
	}
	if !hosttest.HasCode(t, rel.StoreProblem, blocking.ArtifactNotFound) {
		t.Fatalf("first read: store problem %v, want %s", rel.StoreProblem, blocking.ArtifactNotFound)
	}
	if rel.RefillProblem != nil {
		t.Fatalf("first read: refill problem %v, want none", rel.RefillProblem)
	}
	reg.Down()
	runClinic(t, coordtest.Open(t, h.Home), "filled-1")
}

// tamperStoreIR changes one byte of the IR blob of the release kept in
// the store under home, keeping its size.
func tamperStoreIR(t *testing.T, home string) {
	t.Helper()
	dir := filepath.Join(home, bind.StoreDir)
	var idx struct {
		Manifests []struct {
			Digest       string `json:"digest"`
			ArtifactType string `json:"artifactType"`
		} `json:"manifests"`
	}
	raw, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &idx); err != nil {
		t.Fatal(err)
	}
	for _, m := range idx.Manifests {
		_, hex, _ := strings.Cut(m.Digest, ":")
		mraw, err := os.ReadFile(filepath.Join(dir, "blobs", "sha256", hex))
		if err != nil {
			t.Fatal(err)
		}
		var man struct {
			ArtifactType string `json:"artifactType"`
			Layers       []struct {
				MediaType string `json:"mediaType"`
				Digest    string `json:"digest"`
			} `json:"layers"`
		}
		if json.Unmarshal(mraw, &man) != nil || man.ArtifactType != oci.ArtifactType {
			continue
		}
		for _, l := range man.Layers {
			if l.MediaType != oci.IRMediaType {
				continue
			}
			_, lhex, _ := strings.Cut(l.Digest, ":")
			path := filepath.Join(dir, "blobs", "sha256", lhex)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			b[len(b)/2] ^= 1
			_ = os.Chmod(path, 0o644)
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatal("no kept release IR blob to tamper with")
}
