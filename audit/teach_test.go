package audit

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/coordinator/attention"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// TestAuditTeachRequests: a teach request made on a paused run is in the
// export and verifies; an edited one breaks the teach link.
func TestAuditTeachRequests(t *testing.T) {
	ctx := context.Background()
	f := &fixture{Host: hosttest.New(t, nil)}
	f.WriteRegistry(strings.Replace(resolve.StarterRegistry(hosttest.Name), `description: "Append one note to a record."`, "description: \"Append one note to a record.\"\n\t\tapproval: \"required\"", 1))
	opened := f.Open()
	f.AddConnection(opened, "sandbox", resolve.SandboxConnector, hosttest.Sandbox)
	f.Bind(opened, "claude-test")
	c, err := coordinator.Open(ctx, coordinator.Options{Home: f.Home, Deployment: "clinic", EffectTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	in := json.RawMessage(`{"record_ref":"AB-1234","urgency":"soon","summary":"Persistent cough, three days."}`)
	for _, id := range []string{"done-first", "paused"} {
		res, err := c.Run(ctx, coordinator.RunRequest{Workflow: "append_triage_note", Inputs: in, RequestID: id, Wait: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if id == "done-first" {
			// A sealed receipt, so the bundle has a chain to verify.
			if _, err := c.Decide(ctx, attention.Decision{AttentionID: res.AttentionID, Decision: contract.DecisionReject, By: "Dr Ada", Channel: "cli"}); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if _, err := c.Decide(ctx, attention.Decision{AttentionID: res.AttentionID, Decision: contract.DecisionTeach, By: "Dr Ada", Channel: "cli", Text: "Ask for the ward first."}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	hostPub, err := os.ReadFile(filepath.Join(f.Home, host.HostPubFile))
	if err != nil {
		t.Fatal(err)
	}
	f.keys = Keys{Publisher: f.PublisherPub, Authority: f.AuthorityPub, Host: hostPub}
	f.bundle = filepath.Join(t.TempDir(), "clinic.audit.tar")
	out, err := os.Create(f.bundle)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Export(ctx, ExportOptions{Home: f.Home, Now: time.Now()}, out); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	r := verify(t, f.bundle, f.keys)
	if !r.OK || linkNamed(r, LinkTeach).Detail != "1 teach requests" {
		t.Fatalf("bundle with a teach request: %+v", r.Links)
	}
	edited := rewrite(t, f.bundle, func(d map[string][]byte) {
		editDoc(t, d, DocTeachRequests, func(rs *[]attention.SignedTeachRequest) { (*rs)[0].Request.Text = "Never ask anyone." })
	})
	wantBroken(t, verify(t, edited, f.keys), LinkTeach, blocking.TeachRequestInvalid)
	moved := rewrite(t, f.bundle, func(d map[string][]byte) {
		editDoc(t, d, DocTeachRequests, func(rs *[]attention.SignedTeachRequest) { (*rs)[0].Request.Deployment = "other" })
	})
	wantBroken(t, verify(t, moved, f.keys), LinkTeach, blocking.TeachRequestInvalid)
}
