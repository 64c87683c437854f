package audit

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/oa-dev/oa/admit"
	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/coordinator/attention"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// linkNamed is the report's link of that name (empty when it has none).
func linkNamed(r *Report, name string) Link {
	for _, l := range r.Links {
		if l.Name == name {
			return l
		}
	}
	return Link{}
}

// TestAuditVerifiesSignedDecisions: on a host whose policy names persons,
// the export carries every signed decision, and verify checks each
// signature with the bundle's policy and names the person and key; a
// decision edited in the bundle, or signed by a key the policy does not
// name, breaks the decisions link.
func TestAuditVerifiesSignedDecisions(t *testing.T) {
	ctx := context.Background()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ada, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	_, priv2, _ := ed25519.GenerateKey(rand.Reader)
	mallory, _ := ssh.NewSignerFromKey(priv2)
	f := &fixture{Host: hosttest.New(t, nil)}
	pf, err := os.OpenFile(filepath.Join(f.Home, host.PolicyFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(pf, "\npersons: ada: {name: \"Dr Ada\", ssh_key: %q, may: [{decide: [\"approve\", \"reject\"]}]}\n", strings.TrimSpace(string(ssh.MarshalAuthorizedKey(ada.PublicKey()))))
	pf.Close()
	opened := f.Open()
	if _, _, err := admit.Admit(ctx, opened, f.Release, admit.AdmitOptions{AdmittedBy: "Test Operator", Now: f.Now}); err != nil {
		t.Fatal(err)
	}
	f.WriteRegistry(strings.Replace(resolve.StarterRegistry(hosttest.Name), `description: "Append one note to a record."`, "description: \"Append one note to a record.\"\n\t\tapproval: \"required\"", 1))
	f.AddConnection(opened, "sandbox", resolve.SandboxConnector, hosttest.Sandbox)
	f.Bind(opened, "claude-test")
	c, err := coordinator.Open(ctx, coordinator.Options{Home: f.Home, Deployment: "clinic", EffectTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	in := json.RawMessage(`{"record_ref":"AB-1234","urgency":"soon","summary":"Persistent cough, three days."}`)
	run := func(id string) *coordinator.Result {
		res, err := c.Run(ctx, coordinator.RunRequest{Workflow: "append_triage_note", Inputs: in, RequestID: id, Wait: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	decide := func(id, decision string) {
		stmt, err := coordinator.StatementFor(ctx, opened, id, decision, "ada", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		sd, err := coordinator.SignDecision(*stmt, ada)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Decide(ctx, attention.Decision{AttentionID: id, Decision: decision, Channel: "cli", Signed: sd}); err != nil {
			t.Fatal(err)
		}
	}
	decide(run("rejected").AttentionID, contract.DecisionReject)
	decide(run("approved").AttentionID, contract.DecisionApprove)
	if done := run("approved"); done.Outcome != contract.OutcomeDone {
		t.Fatalf("approved run: %+v", done)
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
	d := linkNamed(r, LinkDecisions)
	if !r.OK || !strings.HasPrefix(d.Detail, "2 signed decisions, every signature verified") || strings.Count(d.Detail, "by ada (Dr Ada) by key "+ssh.FingerprintSHA256(ada.PublicKey())) != 2 {
		t.Fatalf("bundle with signed decisions: %+v", r.Links)
	}
	edited := rewrite(t, f.bundle, func(docs map[string][]byte) {
		editDoc(t, docs, DocDecisions, func(ds *[]host.SignedDecision) { (*ds)[0].Statement.Decision = contract.DecisionApprove })
	})
	wantBroken(t, verify(t, edited, f.keys), LinkDecisions, blocking.DecisionRecordInvalid)
	forged := rewrite(t, f.bundle, func(docs map[string][]byte) {
		editDoc(t, docs, DocDecisions, func(ds *[]host.SignedDecision) {
			sd, err := coordinator.SignDecision((*ds)[0].Statement, mallory)
			if err != nil {
				t.Fatal(err)
			}
			sd.Key = (*ds)[0].Key
			(*ds)[0] = *sd
		})
	})
	wantBroken(t, verify(t, forged, f.keys), LinkDecisions, blocking.DecisionRecordInvalid)
}
