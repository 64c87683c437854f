package main

import (
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oa-dev/oa/admit"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator/attention"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// TestSignedDecisionCLI: on a host whose policy names persons, a decision
// signed with the real ssh-keygen -Y sign over oa attention statement
// counts; one signed with a key the policy does not name, one by a person
// without the right and a free-text --as are refused with their codes and
// change nothing; oa receipts list and oa runs name who decided, by key,
// and oa runs finds the run by its record reference (never stored) and
// exports CSV.
func TestSignedDecisionCLI(t *testing.T) {
	keygen, err := exec.LookPath("ssh-keygen")
	if err != nil {
		t.Skip("no ssh-keygen on this machine")
	}
	dir := t.TempDir()
	key := func(name string) string {
		p := filepath.Join(dir, name)
		if out, err := exec.Command(keygen, "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", p).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v\n%s", err, out)
		}
		pub, err := os.ReadFile(p + ".pub")
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(pub))
	}
	ada, bob := key("ada"), key("bob")
	key("mallory")

	h := hosttest.New(t, nil)
	pf, err := os.OpenFile(filepath.Join(h.Home, host.PolicyFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(pf, "\npersons: {\nada: {name: \"Dr Ada\", ssh_key: %q, may: [{decide: [\"approve\", \"reject\"]}]}\nbob: {ssh_key: %q, may: [{decide: [\"escalate\"]}]}\n}\n", ada, bob)
	pf.Close()
	opened := h.Open()
	if _, _, err := admit.Admit(context.Background(), opened, h.Release, admit.AdmitOptions{AdmittedBy: "Test Operator", Now: h.Now}); err != nil {
		t.Fatal(err)
	}
	h.WriteRegistry(strings.Replace(resolve.StarterRegistry(hosttest.Name), `description: "Append one note to a record."`, `description: "Append one note to a record."`+"\n\t\tapproval:    \"required\"", 1))
	h.AddConnection(opened, "sandbox", resolve.SandboxConnector, hosttest.Sandbox)
	h.Bind(opened, "claude-test")
	t.Setenv("OA_HOME", h.Home)
	c := openCoordinator(t, h)
	paused := runClinic(t, c, "signed-1", "AB-1234")
	id := paused.AttentionID
	if paused.Reason != contract.ReasonApprovalRequired {
		t.Fatalf("paused: %+v", paused)
	}
	out := cliOK(t, "policy", "check")
	wantHas(t, "policy check", out, "person ada: key SHA256:", "may approve, reject")

	// The statement, signed by hand with ssh-keygen.
	sign := func(person, decision, keyName string) (string, string) {
		stmt := filepath.Join(dir, person+"-"+decision+"-"+keyName+".statement")
		if err := os.WriteFile(stmt, []byte(cliOK(t, "attention", "statement", id, "--decision", decision, "--person", person)), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(keygen, "-Y", "sign", "-f", filepath.Join(dir, keyName), "-n", "oa-decision", stmt).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen -Y sign: %v\n%s", err, out)
		}
		return stmt, stmt + ".sig"
	}
	stmt, sig := sign("ada", "approve", "mallory")
	cliRefused(t, "decision_signature_invalid", "attention", "approve", id, "--person", "ada", "--statement", stmt, "--signature", sig)
	cliRefused(t, "decision_signature_invalid", "attention", "approve", id, "--person", "ada", "--key", filepath.Join(dir, "bob"))
	cliRefused(t, "decision_not_permitted", "attention", "approve", id, "--person", "bob", "--key", filepath.Join(dir, "bob"))
	cliRefused(t, "decision_person_unknown", "attention", "approve", id, "--person", "mallory", "--key", filepath.Join(dir, "mallory"))
	cliRefused(t, "decision_unsigned", "attention", "approve", id, "--as", "Dr Ada")
	cliRefused(t, "give exactly one way to sign", "attention", "approve", id, "--person", "ada")
	var it attention.Item
	wantJSON(t, "after the refusals", cliOK(t, "attention", "show", id, "--json"), &it)
	if it.State != attention.Open {
		t.Fatalf("after the refusals: state = %q, want %q", it.State, attention.Open)
	}
	if it.DecidedBy != "" {
		t.Fatalf("after the refusals: decided by %q, want no one", it.DecidedBy)
	}

	stmt, sig = sign("ada", "approve", "ada")
	wantJSON(t, "ada's approval", cliOK(t, "attention", "approve", id, "--person", "ada", "--statement", stmt, "--signature", sig, "--json"), &it)
	if it.State != attention.Approved {
		t.Errorf("ada's approval: state = %q, want %q", it.State, attention.Approved)
	}
	if it.DecidedBy != "ada" {
		t.Errorf("ada's approval: decided by %q, want ada", it.DecidedBy)
	}
	if !strings.HasPrefix(it.DecidedKey, "SHA256:") {
		t.Errorf("ada's approval: decided key = %q, want prefix SHA256:", it.DecidedKey)
	}
	if t.Failed() {
		t.FailNow()
	}
	if done := runClinic(t, c, "signed-1", "AB-1234"); done.Outcome != contract.OutcomeDone {
		t.Fatalf("resumed: %+v", done)
	}
	// A second run, rejected with --key.
	other := runClinic(t, c, "signed-2", "CD-5678")
	cliOK(t, "attention", "reject", other.AttentionID, "--person", "ada", "--key", filepath.Join(dir, "ada"))

	if out := cliOK(t, "receipts", "list"); strings.Count(out, "by ada ("+it.DecidedKey+")") != 2 {
		t.Fatalf("receipts list:\n%s", out)
	}
	var runs []struct {
		RunID         string `json:"runId"`
		ReceiptDigest string `json:"receiptDigest"`
		DecidedBy     []struct {
			Person, Key string
		} `json:"decidedBy"`
	}
	wantJSON(t, "runs --record AB-1234", cliOK(t, "runs", "--record", "AB-1234", "--person", "ada", "--json"), &runs)
	if len(runs) != 1 {
		t.Fatalf("runs --record AB-1234: %d runs, want 1: %+v", len(runs), runs)
	}
	if runs[0].RunID != paused.RunID {
		t.Fatalf("runs --record AB-1234: run %q, want %q", runs[0].RunID, paused.RunID)
	}
	if runs[0].DecidedBy[0].Key != it.DecidedKey {
		t.Fatalf("runs --record AB-1234: decided by key %q, want %q", runs[0].DecidedBy[0].Key, it.DecidedKey)
	}
	if !strings.HasPrefix(runs[0].ReceiptDigest, "sha256:") {
		t.Fatalf("runs --json names the receipt's digest receiptDigest, as every camelCase record does: %+v", runs[0])
	}
	if out := cliOK(t, "runs", "--record", "ZZ-0000"); !strings.Contains(out, "no runs") {
		t.Fatalf("runs of another record:\n%s", out)
	}
	rows, err := csv.NewReader(strings.NewReader(cliOK(t, "runs", "--outcome", "done", "--workflow", "append_triage_note", "--format", "csv"))).ReadAll()
	if err != nil {
		t.Fatalf("runs --format csv: %v", err)
	}
	if len(rows) != 2 {
		t.Fatalf("runs --format csv: %d rows, want a header and 1: %q", len(rows), rows)
	}
	for _, cell := range []struct {
		row, col int
		want     string
	}{
		{0, 0, "run_id"}, {1, 0, paused.RunID}, {1, 10, "approve by ada"}, {1, 11, it.DecidedKey},
		// The receipt's digest is column receipt_digest, the same as --json's.
		{0, 9, "receipt_digest"}, {1, 9, runs[0].ReceiptDigest},
	} {
		if got := rows[cell.row][cell.col]; got != cell.want {
			t.Errorf("runs --format csv: row %d column %d = %q, want %q", cell.row, cell.col, got, cell.want)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	out = cliOK(t, "runs", "--format", "csv")
	wantLacks(t, "the export carries an input", out, "AB-1234", "Cough")
	cliRefused(t, "--since is a time", "runs", "--since", "yesterday")
}
