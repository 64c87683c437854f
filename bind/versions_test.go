package bind_test

import (
	"context"
	"testing"
	"time"

	"github.com/oa-dev/oa/admit"
	"github.com/oa-dev/oa/bind"
	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// TestTwoVersionsServeSideBySide (issue 39): deployment "clinic" is bound
// to version 1.2.0 of the package; admitting 1.3.0 and binding it to
// "clinic2" leaves "clinic" approved by the one plan check, and both
// serve. Going back to 1.2.0 needs a rollback, and revoking 1.3.0 stops
// "clinic2" only.
func TestTwoVersionsServeSideBySide(t *testing.T) {
	ctx := context.Background()
	f, first := newFixture(t)
	rel := f.PublishVersion("1.3.0")
	if _, _, err := admit.Admit(ctx, f.host, &rel.Release, admit.AdmitOptions{AdmittedBy: "Dr Ada", Now: f.Now}); err != nil {
		t.Fatal(err)
	}
	plan, _, err := resolve.Compute(ctx, f.host, &rel.Release, resolve.Request{Deployment: "clinic2", Model: model}, resolve.ComputeOptions{Now: f.Now, Probe: true})
	if err != nil {
		t.Fatal(err)
	}
	second, err := bind.Bind(ctx, f.host, rel.Ref.String(), false, plan, bind.Approval{By: "Dr Ada", Approved: true, Now: f.Now})
	if err != nil {
		t.Fatal(err)
	}
	serves := func(b *bind.Binding) *bind.Report {
		t.Helper()
		art, err := bind.FetchRelease(ctx, f.host, b, oci.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		r, _, err := bind.Check(ctx, f.host, b, art, bind.CheckOptions{Now: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, b := range []*bind.Binding{first, second} {
		if r := serves(b); !r.Approved || r.Err() != nil {
			t.Fatalf("deployment %s (%s) after the second admission: %+v", b.Deployment, b.ArtifactDigest, r)
		}
	}
	if first.ArtifactDigest == second.ArtifactDigest {
		t.Fatal("both deployments are bound to one release")
	}
	if _, _, err := admit.Admit(ctx, f.host, f.Release, admit.AdmitOptions{AdmittedBy: "Dr Ada", Now: f.Now}); !hosttest.HasCode(t, err, blocking.AdmissionRollback) {
		t.Fatalf("re-admitting 1.2.0 without a rollback: %v", err)
	}
	if _, err := admit.Revoke(ctx, f.host, second.ArtifactDigest, "broken", "Dr Ada", f.Now); err != nil {
		t.Fatal(err)
	}
	if r := serves(second); r.Approved || !r.NotAdmitted() {
		t.Fatalf("the revoked release still serves: %+v", r)
	}
	if r := serves(first); !r.Approved || r.Err() != nil {
		t.Fatalf("revoking 1.3.0 stopped the deployment on 1.2.0: %+v", r)
	}
}
