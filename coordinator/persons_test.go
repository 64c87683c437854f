package coordinator_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/oa-dev/oa/admit"
	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector/sandbox"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/coordinator/attention"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/ledger"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// decider is a person's SSH key in a test.
type decider struct {
	signer ssh.Signer
	line   string
}

func newDecider(t *testing.T) decider {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return decider{s, strings.TrimSpace(string(ssh.MarshalAuthorizedKey(s.PublicKey())))}
}

// servePersons serves the clinic deployment (every note approved by a
// person) on a host whose policy names persons, admitted and bound under
// that policy.
func servePersons(t *testing.T, persons string) *served {
	t.Helper()
	ctx := context.Background()
	s := &served{Host: hosttest.New(t, nil)}
	f, err := os.OpenFile(filepath.Join(s.Home, host.PolicyFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Fprintf(f, "\npersons: {\n%s\n}\n", persons); err != nil {
		t.Fatal(err)
	}
	f.Close()
	s.host = s.Open()
	if _, _, err := admit.Admit(ctx, s.host, s.Release, admit.AdmitOptions{AdmittedBy: "Test Operator", Now: s.Now}); err != nil {
		t.Fatal(err)
	}
	s.WriteRegistry(approvalRegistry())
	s.AddConnection(s.host, "sandbox", resolve.SandboxConnector, hosttest.Sandbox)
	s.Bind(s.host, "claude-test")
	s.c = s.open(t)
	return s
}

// signed is decision on item id as person, signed with key.
func signed(t *testing.T, h *host.Host, id, decision, person string, key ssh.Signer) attention.Decision {
	t.Helper()
	stmt, err := coordinator.StatementFor(context.Background(), h, id, decision, person, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	sd, err := coordinator.SignDecision(*stmt, key)
	if err != nil {
		t.Fatal(err)
	}
	return attention.Decision{AttentionID: id, Decision: decision, Channel: "cli", Signed: sd}
}

// TestDecisionsAreSignedByPersons: on a host whose policy names persons,
// a decision signed by a key the policy does not hold, by a person it
// does not name, by a person without that right, or not signed at all is
// refused with its code and nothing moves: the item stays open, the run
// paused, nothing written. The person's own signed approval then counts,
// is kept on the item, and names them and their key.
func TestDecisionsAreSignedByPersons(t *testing.T) {
	ctx := context.Background()
	ada, bob, mallory := newDecider(t), newDecider(t), newDecider(t)
	s := servePersons(t, fmt.Sprintf(`ada: {name: "Dr Ada", ssh_key: %q, may: [{decide: ["approve", "reject", "teach"], capabilities: ["records.*"]}]}
bob: {ssh_key: %q, may: [{decide: ["escalate"]}, {decide: ["approve"], packages: ["another-package"]}]}`, ada.line, bob.line))
	res := s.run(t, "signed", "AB-1234")
	if res.Reason != contract.ReasonApprovalRequired {
		t.Fatalf("paused: %+v", res)
	}
	id := res.AttentionID
	forged := signed(t, s.host, id, contract.DecisionApprove, "ada", mallory.signer)
	forged.Signed.Key = signed(t, s.host, id, contract.DecisionApprove, "ada", ada.signer).Signed.Key
	otherItem := signed(t, s.host, id, contract.DecisionApprove, "ada", ada.signer)
	otherItem.Signed.Statement.AttentionID = "att_other"
	edited := signed(t, s.host, id, contract.DecisionApprove, "ada", ada.signer)
	edited.Signed.Statement.At = edited.Signed.Statement.At.Add(-time.Second)
	wrongDecision := signed(t, s.host, id, contract.DecisionReject, "ada", ada.signer)
	wrongDecision.Decision = contract.DecisionApprove
	for name, c := range map[string]struct {
		d    attention.Decision
		want blocking.Code
	}{
		"unsigned, free text":        {attention.Decision{AttentionID: id, Decision: contract.DecisionApprove, By: "Dr Ada", Channel: "cli"}, blocking.DecisionUnsigned},
		"key not in policy":          {forged, blocking.DecisionSignatureInvalid},
		"person not in policy":       {signed(t, s.host, id, contract.DecisionApprove, "mallory", mallory.signer), blocking.DecisionPersonUnknown},
		"person without the right":   {signed(t, s.host, id, contract.DecisionApprove, "bob", bob.signer), blocking.DecisionNotPermitted},
		"right on another package":   {signed(t, s.host, id, contract.DecisionReject, "bob", bob.signer), blocking.DecisionNotPermitted},
		"signed by another's key":    {signed(t, s.host, id, contract.DecisionApprove, "ada", bob.signer), blocking.DecisionSignatureInvalid},
		"statement of another item":  {otherItem, blocking.DecisionStatementMismatch},
		"edited after signing":       {edited, blocking.DecisionSignatureInvalid},
		"statement of another thing": {wrongDecision, blocking.DecisionStatementMismatch},
	} {
		for _, decide := range []func(attention.Decision) (*attention.Item, error){
			func(d attention.Decision) (*attention.Item, error) {
				return coordinator.DecideAttention(ctx, s.host, d)
			},
			func(d attention.Decision) (*attention.Item, error) { return s.c.Decide(ctx, d) },
		} {
			if _, err := decide(c.d); !blocking.Has(err, c.want) {
				t.Errorf("%s: %v, want %s", name, err, c.want)
			}
		}
	}
	// Nothing moved.
	item, err := coordinator.AttentionRecords(s.host).LoadOne(ctx, id)
	if err != nil {
		t.Fatalf("after the refusals: %v", err)
	}
	if item.State != attention.Open {
		t.Errorf("after the refusals: item state %s, want %s", item.State, attention.Open)
	}
	if item.DecidedBy != "" {
		t.Errorf("after the refusals: decided by %q, want no one", item.DecidedBy)
	}
	if len(item.Signed) != 0 {
		t.Errorf("after the refusals: %d signed decisions kept, want none", len(item.Signed))
	}
	if again := s.run(t, "signed", "AB-1234"); again.Reason != contract.ReasonApprovalRequired {
		t.Fatalf("the run moved: %+v", again)
	}
	if notes, _ := sandbox.Notes(sandbox.Dir(s.Home), "AB-1234"); len(notes) != 0 {
		t.Fatal("a refused decision let the note be written")
	}

	// Ada's own signed approval counts.
	got, err := coordinator.DecideAttention(ctx, s.host, signed(t, s.host, id, contract.DecisionApprove, "ada", ada.signer))
	if err != nil {
		t.Fatalf("ada's approval: %v", err)
	}
	if got.State != attention.Approved {
		t.Errorf("ada's approval: item state %s, want %s", got.State, attention.Approved)
	}
	if got.DecidedBy != "ada" {
		t.Errorf("ada's approval: decided by %q, want ada", got.DecidedBy)
	}
	if !strings.HasPrefix(got.DecidedKey, "SHA256:") {
		t.Errorf("ada's approval: decided key %q, want prefix SHA256:", got.DecidedKey)
	}
	item, err = coordinator.AttentionRecords(s.host).LoadOne(ctx, id)
	if err != nil {
		t.Fatalf("kept: %v", err)
	}
	if len(item.Signed) != 1 {
		t.Fatalf("kept: %d signed decisions, want 1", len(item.Signed))
	}
	if _, err := s.host.Policy.VerifyDecision(&item.Signed[0], "clinic-triage"); err != nil {
		t.Fatalf("the kept decision does not verify: %v", err)
	}
	if done := s.run(t, "signed", "AB-1234"); done.Outcome != contract.OutcomeDone {
		t.Fatalf("resumed: %+v", done)
	}
	if report, _ := ledger.Open(s.host).VerifyReceipts(ctx); !report.OK {
		t.Fatalf("receipts: %+v", report)
	}
}

// TestClientInstallationSignsForItsPerson: an answer given at an MCP
// client is signed by the host-held key of the installation for the
// person the policy names for it; a coordinator serving no installation
// on such a host cannot decide.
func TestClientInstallationSignsForItsPerson(t *testing.T) {
	ctx := context.Background()
	ada, client := newDecider(t), newDecider(t)
	s := servePersons(t, fmt.Sprintf(`ada: {ssh_key: %q, may: [{decide: ["approve", "reject"]}], clients: {"claude-code": %q}}`, ada.line, client.line))
	res := s.run(t, "via", "AB-1234")
	if _, err := s.c.Decide(ctx, attention.Decision{AttentionID: res.AttentionID, Decision: contract.DecisionReject, By: "elicitation", Channel: "elicitation"}); !blocking.Has(err, blocking.DecisionUnsigned) {
		t.Fatalf("no installation: %v", err)
	}
	s.c.Close()
	c, err := coordinator.Open(ctx, coordinator.Options{Home: s.Home, Deployment: "clinic", EffectTimeout: 2 * time.Second, Operator: os.Stderr,
		Installation: &coordinator.Installation{Client: "claude-code", Person: "ada", Signer: client.signer}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	item, err := c.Decide(ctx, attention.Decision{AttentionID: res.AttentionID, Decision: contract.DecisionReject, By: "elicitation", Channel: "elicitation"})
	if err != nil {
		t.Fatalf("via the installation: %v", err)
	}
	if item.State != attention.Rejected {
		t.Errorf("via the installation: item state %s, want %s", item.State, attention.Rejected)
	}
	if item.DecidedBy != "ada" {
		t.Errorf("via the installation: decided by %q, want ada", item.DecidedBy)
	}
	stored, err := coordinator.AttentionRecords(s.host).LoadOne(ctx, res.AttentionID)
	if err != nil {
		t.Fatalf("kept: %v", err)
	}
	if len(stored.Signed) != 1 {
		t.Fatalf("kept: %d signed decisions, want 1", len(stored.Signed))
	}
	if via := stored.Signed[0].Statement.Via; via != "claude-code" {
		t.Fatalf("kept: decided via %q, want claude-code", via)
	}
	if got := stored.Signed[0].Describe(s.host.Policy); !strings.Contains(got, "via client claude-code") {
		t.Fatalf("Describe = %q", got)
	}
}
