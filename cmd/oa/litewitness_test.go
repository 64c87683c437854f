package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oa-dev/oa/admit"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/ledger"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/coordtest"
	"github.com/oa-dev/oa/testkit/hosttest"
	"github.com/oa-dev/oa/testkit/interoptest"
)

// litewitness is torchwood v0.6.1's cmd/litewitness running on loopback,
// its Ed25519 key in an ssh-agent of its own.
type litewitness struct {
	url, vkey, db, ctl string
}

// startLitewitness starts an ssh-agent holding a new ssh-keygen Ed25519
// key and litewitness (name name) signing with it, knowing the log whose
// verifier key is logKey (witnessctl add-log, add-key). It skips, saying
// what is missing, without ssh-agent, ssh-add or ssh-keygen.
func startLitewitness(t *testing.T, name, origin, logKey string) *litewitness {
	t.Helper()
	for _, tool := range []string{"ssh-agent", "ssh-add", "ssh-keygen"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("litewitness keeps its key in an ssh-agent: %s (OpenSSH's client tools) is not installed", tool)
		}
	}
	lw, ctl := interoptest.Tool(t, "litewitness"), interoptest.Tool(t, "witnessctl")
	// A short folder: a unix socket's path is at most 108 bytes.
	dir, err := os.MkdirTemp("", "lw-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	run := func(env []string, name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	key := filepath.Join(dir, "witness")
	run(nil, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", key)
	sock := filepath.Join(dir, "agent.sock")
	agent := exec.Command("ssh-agent", "-D", "-a", sock)
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { agent.Process.Kill(); agent.Wait() })
	for {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	run([]string{"SSH_AUTH_SOCK=" + sock}, "ssh-add", "-q", key)
	fp := strings.Fields(run(nil, "ssh-keygen", "-l", "-E", "sha256", "-f", key+".pub"))
	if len(fp) < 2 || !strings.HasPrefix(fp[1], "SHA256:") {
		t.Fatalf("ssh-keygen -l: %v", fp)
	}
	db := filepath.Join(dir, "litewitness.db")
	run(nil, ctl, "add-log", "-db", db, "-origin", origin)
	run(nil, ctl, "add-key", "-db", db, "-origin", origin, "-key", logKey)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	var logs bytes.Buffer
	srv := exec.Command(lw, "-db", db, "-name", name, "-key", fp[1], "-ssh-agent", sock, "-listen", addr)
	srv.Stdout, srv.Stderr = &logs, &logs
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- srv.Wait() }()
	t.Cleanup(func() {
		srv.Process.Kill()
		<-exited
	})
	for {
		select {
		case err := <-exited:
			t.Fatalf("litewitness exited: %v\n%s", err, logs.String())
		default:
		}
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return &litewitness{url: "http://" + addr, vkey: cosignatureKey(t, name, key+".pub"), db: db, ctl: ctl}
}

// cosignatureKey is the c2sp.org/tlog-cosignature verifier key of the
// ssh Ed25519 public key file pub under name: NAME+HASH+BASE64(0x04 ||
// key), the hash the first four bytes of SHA-256(NAME "\n" 0x04 key).
func cosignatureKey(t *testing.T, name, pub string) string {
	t.Helper()
	b, err := os.ReadFile(pub)
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	wire, err := base64.StdEncoding.DecodeString(f[1])
	if err != nil {
		t.Fatalf("ssh public key %q: %v", b, err)
	}
	if len(wire) < 32 {
		t.Fatalf("ssh public key %q: %d bytes, want at least 32", b, len(wire))
	}
	key := append([]byte{0x04}, wire[len(wire)-32:]...)
	h := sha256.Sum256(append([]byte(name+"\n"), key...))
	return fmt.Sprintf("%s+%08x+%s", name, binary.BigEndian.Uint32(h[:4]), base64.StdEncoding.EncodeToString(key))
}

// TestLitewitnessCosignsCoordinatorCheckpoints: a C2SP witness nobody
// here wrote — torchwood's litewitness, its key in an ssh-agent, the
// host's log added with its witnessctl — named in the host policy as
// c2sp.org/tlog-policy text (policy_file), is submitted the log's
// checkpoints by the coordinator and cosigns them; the cosignature it
// answers verifies: `oa receipts verify-proof --witness-key K --quorum 1`
// accepts the proof, and so does verify-proof with no flags (the policy's
// witnesses and quorum), while a quorum of a witness that did not
// cosign is log_witness_quorum.
func TestLitewitnessCosignsCoordinatorCheckpoints(t *testing.T) {
	ctx := context.Background()
	h := hosttest.New(t, nil)
	opened := h.Open()
	logKey, err := ledger.Open(opened).LogKey()
	if err != nil {
		t.Fatal(err)
	}
	lw := startLitewitness(t, "litewitness.example", logKey.Verifier().Name(), logKey.VerifierKey())
	policyText := fmt.Sprintf("# the host's witnesses, c2sp.org/tlog-policy\nlog %s\nwitness lite %s %s\nquorum lite\n", logKey.VerifierKey(), lw.vkey, lw.url)
	if err := os.WriteFile(filepath.Join(h.Home, "witnesses.policy"), []byte(policyText), 0o644); err != nil {
		t.Fatal(err)
	}
	policy := filepath.Join(h.Home, host.PolicyFile)
	b, err := os.ReadFile(policy)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(policy, append(b, "\nwitnessing: policy_file: \"witnesses.policy\"\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	s := &coordtest.Served{Host: h}
	s.WriteRegistry(resolve.StarterRegistry(hosttest.Name))
	s.H = s.Open()
	if _, _, err := admit.Admit(ctx, s.H, h.Release, admit.AdmitOptions{AdmittedBy: "Test Operator", Now: h.Now}); err != nil {
		t.Fatal(err)
	}
	s.AddConnection(s.H, "sandbox", resolve.SandboxConnector, hosttest.Sandbox)
	s.Bind(s.H, "claude-test")
	s.C, err = coordinator.Open(ctx, coordinator.Options{Home: h.Home, Deployment: "clinic", EffectTimeout: 2 * time.Second, Operator: coordtest.Log{T: t}})
	if err != nil {
		t.Fatal(err)
	}
	var digest string
	for i := range 2 {
		res := s.Run(t, fmt.Sprintf("req-%d", i), "AB-1234")
		if res.ReceiptDigest == "" {
			t.Fatalf("run %d: %+v", i, res)
		}
		digest = res.ReceiptDigest
	}
	for {
		head, names, err := ledger.Open(s.H).LogCosigned(ctx)
		if err != nil {
			t.Fatal(err)
		}
		size, _ := ledger.Open(s.H).LogHead(ctx)
		if head != nil && head.N == size.N && slices.Equal(names, []string{"lite"}) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.C.Close()
	// litewitness holds the size it cosigned, as witnessctl lists it.
	logs, err := exec.Command(lw.ctl, "list-logs", "-db", lw.db).CombinedOutput()
	if err != nil {
		t.Fatalf("witnessctl list-logs: %v\n%s", err, logs)
	}
	wantHas(t, "witnessctl list-logs", string(logs), `"size":`)
	proof := filepath.Join(t.TempDir(), "receipt.proof")
	if out, errOut, code := oaProc(t, h.Home, "receipts", "prove", digest, "-o", proof); code != 0 {
		t.Fatalf("prove: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, args := range [][]string{
		{"--witness-key", lw.vkey, "--quorum", "1"},
		nil, // the policy's witnesses and quorum
	} {
		out, errOut, code := oaProc(t, h.Home, append([]string{"receipts", "verify-proof", proof}, args...)...)
		what := fmt.Sprintf("verify-proof %v", args)
		wantExit(t, what, code, 0, out, errOut)
		wantHas(t, what, out, "cosigned by 1 witnesses")
	}
	other := otherWitnessKey(t)
	_, errOut, code := oaProc(t, h.Home, "receipts", "verify-proof", proof, "--witness-key", other, "--quorum", "1")
	wantExit(t, "verify-proof with a witness that did not cosign", code, 2, "", errOut)
	wantHas(t, "verify-proof with a witness that did not cosign", errOut, "log_witness_quorum")
}

// otherWitnessKey is the cosignature key of a witness that never saw
// the log.
func otherWitnessKey(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	key := filepath.Join(dir, "other")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	return cosignatureKey(t, "other.example", key+".pub")
}
