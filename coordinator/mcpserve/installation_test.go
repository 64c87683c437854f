package mcpserve_test

import (
	"crypto/ed25519"
	"crypto/rand"

	"context"
	"encoding/json"
	"fmt"
	"golang.org/x/crypto/ssh"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oa-dev/oa/admit"
	"github.com/oa-dev/oa/connector/sandbox"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/coordinator/attention"
	"github.com/oa-dev/oa/harness"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/hosttest"
	"github.com/oa-dev/oa/testkit/servetest"
)

// appendPolicy adds CUE to the host policy of h.
func appendPolicy(t *testing.T, h *hosttest.Host, cue string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(h.Home, host.PolicyFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := fmt.Fprintf(f, "\n%s\n", cue); err != nil {
		t.Fatal(err)
	}
}

// admitAndBind admits the clinic release under the host's policy as it
// is now and binds the approval registry's plan.
func admitAndBind(t *testing.T, h *servetest.Host) {
	t.Helper()
	opened := h.Open()
	if _, _, err := admit.Admit(context.Background(), opened, h.Release, admit.AdmitOptions{AdmittedBy: "Test Operator", Now: h.Now}); err != nil {
		t.Fatal(err)
	}
	h.Bind(opened, "claude-test")
}

// TestAnswerAtClientSignedForItsPerson: oa harness install --person ada
// makes the installation's key once (0600 under $OA_HOME/keys), records
// ada and prints the clients line; the installed entry serves with
// --client; once the policy names the key for ada, the approval a person
// gives in the client's form is signed with it, for ada, and the record
// and the audit name her "via client claude-code". Before that, the same
// answer is refused and nothing is written.
func TestAnswerAtClientSignedForItsPerson(t *testing.T) {
	if testing.Short() {
		t.Skip("builds oa and runs it as a subprocess")
	}
	ctx := context.Background()
	oa := servetest.Binary(t)
	h := &servetest.Host{Host: hosttest.New(t, nil), OA: oa}
	adaKey := newSSHLine(t)
	appendPolicy(t, h.Host, fmt.Sprintf(`persons: ada: {name: "Dr Ada", ssh_key: %q, may: [{decide: ["approve", "reject"]}]}`, adaKey))
	h.WriteRegistry(servetest.ApprovalRegistry())
	h.AddConnection(h.Open(), "sandbox", resolve.SandboxConnector, hosttest.Sandbox)
	admitAndBind(t, h)

	dir := t.TempDir()
	install := func(args ...string) (string, string) {
		t.Helper()
		cmd := exec.Command(oa, append([]string{"harness", "install", "--client", "claude-code", "--scope", "project", "--deployment", "clinic", "--dir", dir}, args...)...)
		cmd.Env = append(os.Environ(), "OA_HOME="+h.Home)
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			t.Fatalf("oa harness install %v: %v\n%s%s", args, err, out.String(), errOut.String())
		}
		return out.String(), errOut.String()
	}
	refused := exec.Command(oa, "harness", "install", "--client", "claude-code", "--scope", "project", "--deployment", "clinic", "--dir", dir, "--person", "mallory")
	refused.Env = append(os.Environ(), "OA_HOME="+h.Home)
	if out, err := refused.CombinedOutput(); err == nil || !strings.Contains(string(out), "decision_person_unknown") {
		t.Fatalf("install for a person the policy does not name: %v\n%s", err, out)
	}
	out, _ := install("--person", "ada")
	line := regexp.MustCompile(`clients: \{"claude-code": "(ssh-ed25519 [A-Za-z0-9+/=]+)"\}`).FindStringSubmatch(out)
	if line == nil || !strings.Contains(out, "decider      ada") {
		t.Fatalf("install --person prints no clients line:\n%s", out)
	}
	keyFile, err := host.ClientKeyFile(h.Home, "claude-code", "clinic")
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(keyFile); err != nil || fi.Mode().Perm() != 0o600 || !strings.HasPrefix(keyFile, filepath.Join(h.Home, "keys")+string(filepath.Separator)) {
		t.Fatalf("the installation's key: %v %v", fi, err)
	}
	entry := func() harness.ServerEntry {
		t.Helper()
		var cfg struct {
			MCPServers map[string]harness.ServerEntry `json:"mcpServers"`
		}
		b, _ := os.ReadFile(filepath.Join(dir, ".mcp.json"))
		if err := json.Unmarshal(b, &cfg); err != nil {
			t.Fatal(err)
		}
		e := cfg.MCPServers["oa-clinic"]
		if strings.Join(e.Args, " ") != "coordinator serve --deployment clinic --client claude-code" || e.Command != oa {
			t.Fatalf("server entry: %+v", e)
		}
		return e
	}
	serveArgs := entry().Args[4:]
	rec, err := os.ReadFile(filepath.Join(dir, ".claude", "oa", "clinic.install.json"))
	if err != nil || !strings.Contains(string(rec), `"person": "ada"`) || !strings.Contains(string(rec), line[1]) {
		t.Fatalf("install record: %s %v", rec, err)
	}

	// Before the policy names the key, the person's answer is refused and
	// nothing is written.
	approve := func(*mcp.ElicitRequest) *mcp.ElicitResult {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": contract.DecisionApprove}}
	}
	early := h.Connect(t, servetest.ClientOptions{Answer: approve, ServeExtras: serveArgs})
	if _, code := early.Call(contract.ToolRunWorkflow, map[string]any{"workflow": "append_triage_note", "inputs": servetest.Triage("AB-1234", "Cough."), "request_id": "via-0", "wait_seconds": 30}); code == "" {
		t.Fatal("an answer at a client the policy names for no one was taken")
	}
	if !strings.Contains(early.Stderr.String(), "the host policy names no person with its key") {
		t.Fatalf("the operator was not told:\n%s", early.Stderr)
	}
	if notes, _ := sandbox.Notes(sandbox.Dir(h.Home), "AB-1234"); len(notes) != 0 {
		t.Fatal("a refused answer let the note be written")
	}

	// The operator adds the line; the policy changed, so admit, bind and
	// install again: the key is the one made the first time.
	appendPolicy(t, h.Host, fmt.Sprintf(`persons: ada: clients: {"claude-code": %q}`, line[1]))
	admitAndBind(t, h)
	out, _ = install("--person", "ada")
	if !strings.Contains(out, "named in the host policy") || !strings.Contains(out, "decider      ada answers") {
		t.Fatalf("install again:\n%s", out)
	}
	if again := regexp.MustCompile(`ssh-ed25519 [A-Za-z0-9+/=]+`).FindString(string(must(os.ReadFile(filepath.Join(dir, ".claude", "oa", "clinic.install.json"))))); again != line[1] {
		t.Fatalf("installing again made another key: %q, want %q", again, line[1])
	}
	inspect := exec.Command(oa, "harness", "inspect", "--client", "claude-code", "--scope", "project", "--deployment", "clinic", "--dir", dir)
	inspect.Env = append(os.Environ(), "OA_HOME="+h.Home)
	if b, err := inspect.CombinedOutput(); err != nil || !strings.Contains(string(b), "matches the binding") {
		t.Fatalf("inspect: %v\n%s", err, b)
	}

	person := h.Connect(t, servetest.ClientOptions{Answer: approve, ServeExtras: entry().Args[4:]})
	res := person.Run("via-1", servetest.Triage("CD-5678", "Cough."))
	servetest.Want(t, "approved at the client", res, contract.OutcomeDone, contract.ReasonVerified)
	items, err := coordinator.AttentionRecords(h.Open()).Load(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	var kept *attention.Stored
	for i := range items {
		if items[i].RunID == res["run_id"] {
			kept = &items[i]
		}
	}
	if kept == nil || kept.State != attention.Approved || kept.DecidedBy != "ada" || len(kept.Signed) != 1 {
		t.Fatalf("the approval: %+v", kept)
	}
	sd := kept.Signed[0]
	policy := h.Open().Policy
	if sd.Statement.Via != "claude-code" || sd.Statement.Person != "ada" || !strings.Contains(sd.Describe(policy), "ada (Dr Ada) by key SHA256:") || !strings.HasSuffix(sd.Describe(policy), "via client claude-code") {
		t.Fatalf("the signed answer: %+v, %q", sd.Statement, sd.Describe(policy))
	}
	if _, err := policy.VerifyDecision(&sd, "clinic-triage"); err != nil {
		t.Fatalf("the kept answer does not verify: %v", err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// newSSHLine is the public key line of a fresh Ed25519 key.
func newSSHLine(t *testing.T) string {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(s.PublicKey())))
}
