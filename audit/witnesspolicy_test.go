package audit

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oa-dev/oa/admit"
	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/ledger/translog"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// TestAuditCarriesTheWitnessPolicyFile: a host whose witnessing is a
// c2sp.org/tlog-policy file beside its policy exports that file's text
// (witness-policy.txt); verify rebuilds the host with the bundle's copy,
// never a file of the auditor's, and reports the log link against its
// witnesses (here none answered: below the quorum). A bundle without
// the text is refused, located, as policy_witness_invalid; one with
// other text is another policy than the one admitted.
func TestAuditCarriesTheWitnessPolicyFile(t *testing.T) {
	ctx := context.Background()
	f := &fixture{Host: hosttest.New(t, nil)}
	w, err := translog.LoadWitnessKey(t.TempDir(), "w1.example")
	if err != nil {
		t.Fatal(err)
	}
	text := "# our witness\nwitness one " + w.Verifier().String() + " http://127.0.0.1:9\nquorum one\n"
	if err := os.WriteFile(filepath.Join(f.Home, "witnesses.policy"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	policy := filepath.Join(f.Home, host.PolicyFile)
	b, err := os.ReadFile(policy)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(policy, append(b, "\nwitnessing: policy_file: \"witnesses.policy\"\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	f.WriteRegistry(resolve.StarterRegistry(hosttest.Name))
	opened := f.Open()
	if _, _, err := admit.Admit(ctx, opened, f.Release, admit.AdmitOptions{AdmittedBy: "Test Operator", Now: f.Now}); err != nil {
		t.Fatal(err)
	}
	f.AddConnection(opened, "sandbox", resolve.SandboxConnector, hosttest.Sandbox)
	f.Bind(opened, "claude-test")
	c, err := coordinator.Open(ctx, coordinator.Options{Home: f.Home, Deployment: "clinic", EffectTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	in := json.RawMessage(`{"record_ref":"AB-1234","urgency":"soon","summary":"Persistent cough, three days."}`)
	if _, err := c.Run(ctx, coordinator.RunRequest{Workflow: "append_triage_note", Inputs: in, RequestID: "a", Wait: 30 * time.Second}); err != nil {
		t.Fatal(err)
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
	if got := string(openWhole(t, f.bundle).docs[DocWitnessPolicy]); got != text {
		t.Fatalf("witness-policy.txt %q", got)
	}
	r := verify(t, f.bundle, f.keys)
	if !r.OK || r.Log == nil || r.Log.Witnesses != 1 || r.Log.Quorum != 1 {
		t.Fatalf("report: %+v %+v", r.Log, r.Links)
	}
	for _, l := range r.Links {
		if l.Name == LinkLog && !strings.Contains(l.Detail, "cosigned by 0 of 1 witnesses (quorum 1): below the quorum") {
			t.Fatalf("log link detail %q", l.Detail)
		}
	}
	without := rewrite(t, f.bundle, func(docs map[string][]byte) { delete(docs, DocWitnessPolicy) })
	r, err = Verify(ctx, without, f.keys)
	if err == nil {
		err = r.Err()
	}
	if !blocking.Has(err, blocking.PolicyWitnessInvalid) || !strings.Contains(err.Error(), "witnessing.policy_file") {
		t.Fatalf("without the text: %v", err)
	}
	other := rewrite(t, f.bundle, func(docs map[string][]byte) {
		docs[DocWitnessPolicy] = []byte(strings.Replace(text, "quorum one", "quorum none", 1))
	})
	r, err = Verify(ctx, other, f.keys)
	if err != nil || r.OK || r.FirstBroken != LinkAdmission {
		t.Fatalf("a bundle with other witnesses than the admitted policy's: %v, first broken %q", err, r.FirstBroken)
	}
}
