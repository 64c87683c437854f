package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/coordinator/attention"
)

// sshKeyFile writes a fresh Ed25519 key in OpenSSH's format to dir/name
// and returns its public key line.
func sshKeyFile(t *testing.T, dir, name string) string {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, name)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(s.PublicKey())))
}

// TestSignedAnswerCLI: on a host whose policy names persons, an answer
// to an app's question is a signed decision: a free-text --as, a key the
// policy does not name for the person, and a person who may not approve
// are refused with their codes and the app gets nothing; ada's answer
// signed with her key reaches the app, and the item keeps her signed
// statement, which names the answer's digest and verifies.
func TestSignedAnswerCLI(t *testing.T) {
	dir := t.TempDir()
	ada, bob := sshKeyFile(t, dir, "ada"), sshKeyFile(t, dir, "bob")
	sshKeyFile(t, dir, "mallory")
	h, got := askingClinicWith(t, fmt.Sprintf(`persons: {
ada: {name: "Dr Ada", ssh_key: %q, may: [{decide: ["approve", "reject"]}]}
bob: {ssh_key: %q, may: [{decide: ["escalate"]}]}
}`, ada, bob))
	c := openCoordinator(t, h)
	paused := runClinic(t, c, "req-signed-q", "AB-1234")
	if paused.Reason != contract.ReasonDownstreamQuestion {
		t.Fatalf("run reason = %q, want %q (paused on the app's question)", paused.Reason, contract.ReasonDownstreamQuestion)
	}
	if paused.AttentionID == "" {
		t.Fatalf("paused run has no attention id: %+v", paused)
	}
	id := paused.AttentionID
	cliRefused(t, "decision_unsigned", "attention", "answer", id, "--as", "Dr Ada", "--set", "ward=B-4")
	cliRefused(t, "decision_signature_invalid", "attention", "answer", id, "--person", "ada", "--key", filepath.Join(dir, "mallory"), "--set", "ward=B-4")
	cliRefused(t, "decision_not_permitted", "attention", "answer", id, "--person", "bob", "--key", filepath.Join(dir, "bob"), "--set", "ward=B-4")
	cliRefused(t, "decision_person_unknown", "attention", "answer", id, "--person", "mallory", "--key", filepath.Join(dir, "mallory"), "--decline")
	if *got != nil {
		t.Fatalf("a refused answer reached the app: %v", *got)
	}
	var it attention.Item
	wantJSON(t, "ada's answer", cliOK(t, "attention", "answer", id, "--person", "ada", "--key", filepath.Join(dir, "ada"), "--set", "ward=B-4", "--json"), &it)
	if it.State != attention.Answered {
		t.Errorf("ada's answer: state = %q, want %q", it.State, attention.Answered)
	}
	if it.DecidedBy != "ada" {
		t.Errorf("ada's answer: decided by %q, want ada", it.DecidedBy)
	}
	if !strings.HasPrefix(it.DecidedKey, "SHA256:") {
		t.Errorf("ada's answer: decided key = %q, want prefix SHA256:", it.DecidedKey)
	}
	if t.Failed() {
		t.FailNow()
	}
	res, err := c.GetRun(context.Background(), paused.RunID, 30*time.Second)
	if err != nil {
		t.Fatalf("after the answer: %v", err)
	}
	if res.Outcome != contract.OutcomeDone {
		t.Fatalf("after the answer: outcome = %q, want %q: %+v", res.Outcome, contract.OutcomeDone, res)
	}
	if (*got)["ward"] != "B-4" {
		t.Fatalf("after the answer: the app got ward %v, want B-4", (*got)["ward"])
	}
	opened := h.Open()
	stored, err := coordinator.AttentionRecords(opened).LoadOne(context.Background(), id)
	if err != nil {
		t.Fatalf("kept: %v", err)
	}
	if len(stored.Signed) != 1 {
		t.Fatalf("kept %d signed decisions, want 1: %+v", len(stored.Signed), stored)
	}
	sd := stored.Signed[0]
	if want := attention.AnswerDigest(attention.Answer{Action: "accept", Content: map[string]any{"ward": "B-4"}}); sd.Statement.Answer != want {
		t.Errorf("the statement's answer = %v, want %v", sd.Statement.Answer, want)
	}
	if sd.Statement.Decision != contract.DecisionApprove {
		t.Errorf("the statement's decision = %v, want %v", sd.Statement.Decision, contract.DecisionApprove)
	}
	if t.Failed() {
		t.FailNow()
	}
	if _, err := opened.Policy.VerifyDecision(&sd, "clinic-triage"); err != nil {
		t.Fatalf("the kept answer does not verify: %v", err)
	}
}
