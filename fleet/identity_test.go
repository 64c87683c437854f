package fleet_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/oa-dev/oa/admit"
	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/fleet"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/testkit/fleettest"
	"github.com/oa-dev/oa/testkit/hosttest"
	"github.com/oa-dev/oa/testkit/interoptest"
	"github.com/oa-dev/oa/testkit/sigstoretest"
)

// TestProvisionKeylessPublisher: a host whose policy trusts the publisher
// by certificate identity (not by key) is provisioned like any other: the
// release, signed by stock cosign with a certificate of a test CA and a
// timestamp, is copied with its signature, admitted under the host's own
// policy and bound inside the envelope's ceiling; the admission names the
// identity that signed. An envelope whose ceiling names publishers
// pre-approves only those: another identity, the identity under another
// trusted root, or a key leave the release waiting for a person.
func mustRef(t *testing.T, s string) oci.Ref {
	t.Helper()
	r, err := oci.ParseRef(s, oci.RefOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestProvisionKeylessPublisher(t *testing.T) {
	ctx := context.Background()
	f := fleettest.New(t)
	ca := sigstoretest.NewCA(t)
	tsa := ca.ServeTSA(t)
	now := time.Now()
	const subject, issuer = "https://github.com/acme/workers/.github/workflows/release.yml@refs/tags/v1.2.0", "https://token.actions.githubusercontent.com"
	leaf := ca.Leaf(t, subject, issuer, now.Add(-time.Hour), now.Add(time.Hour))
	cert, chain, key := leaf.WriteFiles(t, t.TempDir())
	cmd := exec.Command(interoptest.Tool(t, "cosign"), "sign", "--key", key, "--certificate", cert, "--certificate-chain", chain,
		"--tlog-upload=false", "--timestamp-server-url", tsa, "-y", f.Release)
	cmd.Env = interoptest.Env(t, "COSIGN_PASSWORD="+sigstoretest.Password)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cosign sign: %v\n%s", err, out)
	}

	rootBytes := ca.TrustedRoot(t, true)
	keylessHost := func(id string) *fleettest.Host {
		t.Helper()
		h := f.NewHost(id, fleettest.HostOptions{PreApprove: true})
		policy := filepath.Join(h.Home, host.PolicyFile)
		b, err := os.ReadFile(policy)
		if err != nil {
			t.Fatal(err)
		}
		keyLine := regexp.MustCompile(`(?m)^\tpublisher: key: .*$`)
		if !keyLine.Match(b) {
			t.Fatalf("the starter policy has no publisher key line:\n%s", b)
		}
		b = keyLine.ReplaceAll(b, []byte("\tci: {identity: {issuer: \""+issuer+"\", subject: \""+subject+"\"}, trusted_root: \"roots/ci.json\"}"))
		if err := os.MkdirAll(filepath.Join(h.Home, "roots"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(h.Home, "roots", "ci.json"), rootBytes, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(policy, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return h
	}
	h, admitted := keylessHost("h01"), keylessHost("h02")
	// On h02 a person admitted the release already: the fleet would only
	// bind it, and holds the ceiling to the admission's publisher.
	func() {
		opened, err := host.Open(ctx, admitted.Home)
		if err != nil {
			t.Fatal(err)
		}
		defer opened.Close()
		target, err := oci.Open(ctx, mustRef(t, f.Release), oci.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := admit.Admit(ctx, opened, &oci.Release{Target: target, Descriptor: f.Desc}, admit.AdmitOptions{AdmittedBy: "Dr Ada", Now: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}()

	rootDigest := digest.FromBytes(rootBytes).String()
	publish := func(publishers string) {
		t.Helper()
		ceiling := `{capabilities: ["*"], max_risk: "consequential", publishers: {` + publishers + `}}`
		spec, err := fleet.LoadSpec(f.WriteSpec(f.Spec(f.Release, []string{"h01", "h02"}, ceiling)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fleet.Publish(ctx, spec, f.Key.Signer, fleet.Options{}); err != nil {
			t.Fatal(err)
		}
	}

	// A ceiling naming another identity (or the right one under another
	// trusted root, or a key) does not pre-approve the release: it waits
	// for a person, unadmitted.
	for _, other := range []string{
		`ci: identity: {issuer: "` + issuer + `", subject: "https://github.com/evil/workers/.github/workflows/release.yml@refs/tags/v1.2.0"}`,
		`ci: {identity: {issuer: "` + issuer + `", subject_regexp: "^https://github\\.com/acme/"}, trusted_root_digest: "sha256:` + strings.Repeat("0", 64) + `"}`,
		`ci: key: ` + strconv.Quote(string(f.Publisher.Public)),
	} {
		publish(other)
		for _, on := range []*fleettest.Host{h, admitted} {
			r, err := provision(t, f, on)
			if !hosttest.HasCode(t, err, blocking.FleetPublisherNotInCeiling) || r.Status.State != fleet.AwaitingApproval || r.Admitted || r.Bound {
				t.Fatalf("%s: a ceiling naming another publisher (%s): %v %+v", on.ID, other, err, r)
			}
		}
	}

	// Named by identity (a regular expression) and trusted root digest,
	// the release is admitted and bound.
	publish(`ci: {identity: {issuer: "` + issuer + `", subject_regexp: "^https://github\\.com/acme/workers/"}, trusted_root_digest: "` + rootDigest + `"}`)
	r, err := provision(t, f, h)
	if err != nil || r.Status.State != fleet.Bound || !r.Admitted {
		t.Fatalf("provision: %v %+v", err, r)
	}
	if r, err := provision(t, f, admitted); err != nil || r.Status.State != fleet.Bound || !r.Bound {
		t.Fatalf("provision of the admitted release: %v %+v", err, r)
	}
	opened, err := host.Open(ctx, h.Home)
	if err != nil {
		t.Fatal(err)
	}
	defer opened.Close()
	st, err := admit.StatusOf(ctx, opened, f.Desc.Digest.String(), time.Now())
	if err != nil || st.State != admit.Active {
		t.Fatalf("status %+v %v", st, err)
	}
	p := st.Record.Publisher
	if p.Name != "ci" || p.Signer == nil || p.Signer.Subject != subject || p.Signer.Issuer != issuer || p.TrustedRootDigest == "" {
		t.Fatalf("the admission does not name the identity: %+v", p)
	}
}
