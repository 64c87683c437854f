package coordinator_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/oa-dev/oa/admit"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/ledger"
	"github.com/oa-dev/oa/ledger/translog"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/coordtest"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// lockedBuffer is the operator's channel, read while the coordinator
// writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestCoordinatorSubmitsCheckpointsToWitnesses: with two witnesses and a
// quorum of two in the policy, runs complete while one witness is down
// (the coordinator submits in the background, never on a run's path);
// the operator is told of the failure in fixed words; the loop retries
// with backoff and, once the witness is up, both have cosigned the
// newest checkpoint — stored with the log, so receipts prove carries the
// cosignatures and a verifier with the quorum accepts the proof.
func TestCoordinatorSubmitsCheckpointsToWitnesses(t *testing.T) {
	ctx := context.Background()
	h := hosttest.New(t, nil)
	opened := h.Open()
	logKey, err := ledger.Open(opened).LogKey()
	if err != nil {
		t.Fatal(err)
	}
	witness := func(name string) (*ledger.WitnessServer, *httptest.Server, *atomic.Bool) {
		w, err := ledger.OpenWitness(ctx, t.TempDir(), name, []note.Verifier{logKey.Verifier()}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Close() })
		var down atomic.Bool
		srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			if down.Load() {
				http.Error(rw, "secret-internal-detail", http.StatusServiceUnavailable)
				return
			}
			w.Handler.ServeHTTP(rw, r)
		}))
		t.Cleanup(srv.Close)
		return w, srv, &down
	}
	w1, s1, _ := witness("w1.example")
	w2, s2, down2 := witness("w2.example")
	down2.Store(true)
	policy := filepath.Join(h.Home, host.PolicyFile)
	b, err := os.ReadFile(policy)
	if err != nil {
		t.Fatal(err)
	}
	section := fmt.Sprintf("\nwitnessing: {\n\twitnesses: {\n\t\tone: {key: %q, url: %q}\n\t\ttwo: {key: %q, url: %q}\n\t}\n\tquorum: 2\n}\n", w1.VerifierKey, s1.URL, w2.VerifierKey, s2.URL)
	if err := os.WriteFile(policy, append(b, section...), 0o644); err != nil {
		t.Fatal(err)
	}
	s := &coordtest.Served{Host: h}
	s.WriteRegistry(resolve.StarterRegistry(hosttest.Name))
	s.H = s.Open()
	// The policy changed, so the release is admitted again under it.
	if _, _, err := admit.Admit(ctx, s.H, h.Release, admit.AdmitOptions{AdmittedBy: "Test Operator", Now: h.Now}); err != nil {
		t.Fatal(err)
	}
	s.AddConnection(s.H, "sandbox", resolve.SandboxConnector, hosttest.Sandbox)
	s.Bind(s.H, "claude-test")
	var operator lockedBuffer
	s.C, err = coordinator.Open(ctx, coordinator.Options{Home: h.Home, Deployment: "clinic", EffectTimeout: 2 * time.Second, Operator: &operator})
	if err != nil {
		t.Fatal(err)
	}
	defer s.C.Close()
	var last *coordinator.Result
	for i := range 3 {
		last = s.Run(t, fmt.Sprintf("req-%d", i), "AB-1234")
		if last.ReceiptDigest == "" {
			t.Fatalf("run %d: no receipt digest (outcome %s)", i, last.Outcome)
		}
		if last.Outcome == contract.OutcomeRunning {
			t.Fatalf("run %d: still running, want ended", i)
		}
	}
	cosigners := func(want int) []string {
		for {
			head, names, err := ledger.Open(s.H).LogCosigned(ctx)
			if err != nil {
				t.Fatal(err)
			}
			size, _ := ledger.Open(s.H).LogHead(ctx)
			if head != nil && head.N == size.N && len(names) >= want {
				return names
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if got := cosigners(1); strings.Join(got, ",") != "one" {
		t.Fatalf("while two is down: %v", got)
	}
	for !strings.Contains(operator.String(), "witness two: the log's newest checkpoint is not cosigned: the witness refused it (503)") {
		time.Sleep(50 * time.Millisecond)
	}
	down2.Store(false)
	if got := cosigners(2); strings.Join(got, ",") != "one,two" {
		t.Fatalf("after two is up: %v", got)
	}
	if out := operator.String(); strings.Contains(out, "secret-internal-detail") {
		t.Errorf("the operator's lines carry the witness's words:\n%s", out)
	}
	if out := operator.String(); strings.Contains(out, "127.0.0.1") {
		t.Errorf("the operator's lines carry the witness's address:\n%s", out)
	}
	p, err := ledger.Open(s.H).ProveReceipt(ctx, last.ReceiptDigest)
	if err != nil {
		t.Fatal(err)
	}
	v, err := translog.VerifyProof(p.Marshal(), translog.Policy{Log: logKey.Verifier(), Witnesses: s.H.Policy.Witnessing.Verifiers(), Quorum: 2}, nil)
	if err != nil {
		t.Fatalf("the proof with its cosignatures: %v", err)
	}
	if len(v.Cosigners) != 2 {
		t.Fatalf("the proof has %d cosigners, want 2: %+v", len(v.Cosigners), v)
	}
}
