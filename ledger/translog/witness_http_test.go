package translog_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/ledger/translog"
)

// witnessServer is a witness served over real HTTP on loopback, its state
// in a real store, its key made in a fresh state folder.
type witnessServer struct {
	url    string
	key    note.Verifier
	mu     sync.Mutex
	events []translog.WitnessEvent
}

func serveWitness(t *testing.T, logs ...note.Verifier) *witnessServer {
	t.Helper()
	state := newLog(t, "oa/witness-state")
	signer, err := translog.LoadWitnessKey(filepath.Join(state.home, "witness"), "witness.example")
	if err != nil {
		t.Fatal(err)
	}
	ws := &witnessServer{}
	ws.key, err = translog.ParseVerifierKey(signer.Verifier().String())
	if err != nil {
		t.Fatal(err)
	}
	h := translog.NewWitness(signer, logs...).Handler(state.db, func(ev translog.WitnessEvent) {
		ws.mu.Lock()
		ws.events = append(ws.events, ev)
		ws.mu.Unlock()
	})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	ws.url = srv.URL
	return ws
}

func (ws *witnessServer) post(t *testing.T, body []byte) (int, string, string) {
	t.Helper()
	resp, err := http.Post(ws.url+translog.AddCheckpointPath, "text/plain", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
}

// TestWitnessOverHTTP: add-checkpoint over real HTTP answers as
// c2sp.org/tlog-witness says — 200 and a cosignature that verifies with
// the witness's public key; 409 with the known size (text/x.tlog.size)
// for a stale old size and for another root at the cosigned size; 422 for
// a proof that fails; 404 for an unknown log; 403 for a checkpoint
// another key signed; 400 for a malformed body or an old size above the
// checkpoint's; 413 past the bound — and SubmitCheckpoint reads each.
func TestWitnessOverHTTP(t *testing.T) {
	ctx := context.Background()
	a := newLog(t, "oa/clinic-1")
	b := newLog(t, "oa/clinic-1")
	b.key = a.key
	for i := range 8 {
		a.append(t, entry(i))
		if i == 3 {
			b.append(t, "forked")
		} else {
			b.append(t, entry(i))
		}
	}
	ws := serveWitness(t, a.key.Verifier())
	a5, _ := translog.CheckpointAt(ctx, a.db, 5)
	a8, _ := translog.CheckpointAt(ctx, a.db, 8)
	b5, _ := translog.CheckpointAt(ctx, b.db, 5)
	b8, _ := translog.CheckpointAt(ctx, b.db, 8)

	sigs, err := translog.SubmitCheckpoint(ctx, http.DefaultClient, ws.url, ws.key, 0, nil, a5.Note)
	if err != nil {
		t.Fatalf("first checkpoint: %v", err)
	}
	if _, err := translog.CosignatureOf(a5.Note, sigs, ws.key); err != nil {
		t.Fatalf("the cosignature: %v", err)
	}
	// A stale old size: 409, the known size in the body.
	status, ctype, body := ws.post(t, translog.AddCheckpointRequest(0, nil, a8.Note))
	if status != http.StatusConflict || ctype != "text/x.tlog.size" || body != "5\n" {
		t.Fatalf("stale old size: %d %q %q", status, ctype, body)
	}
	var old *translog.ErrOldSize
	if _, err := translog.SubmitCheckpoint(ctx, http.DefaultClient, ws.url, ws.key, 0, nil, a8.Note); !errors.As(err, &old) || old.Size != 5 {
		t.Fatalf("SubmitCheckpoint on a stale size: %v", err)
	}
	// Another root at the size cosigned: 409 too (the spec's same-size rule).
	if status, _, body := ws.post(t, translog.AddCheckpointRequest(5, nil, b5.Note)); status != http.StatusConflict || body != "5\n" {
		t.Fatalf("another root at size 5: %d %q", status, body)
	}
	// A tree that does not extend the one cosigned: 422.
	forked, _ := translog.ProveConsistency(ctx, b.db, 5, 8)
	if status, _, _ := ws.post(t, translog.AddCheckpointRequest(5, forked, b8.Note)); status != http.StatusUnprocessableEntity {
		t.Fatalf("a forked tree: %d", status)
	}
	var st *translog.ErrWitnessStatus
	if _, err := translog.SubmitCheckpoint(ctx, http.DefaultClient, ws.url, ws.key, 5, forked, b8.Note); !errors.As(err, &st) || st.Status != 422 {
		t.Fatalf("SubmitCheckpoint of a fork: %v", err)
	}
	// Unknown log: 404; a checkpoint of the known origin another key signed: 403.
	other := newLog(t, "oa/clinic-2")
	o1 := other.append(t, entry(1))
	if status, _, _ := ws.post(t, translog.AddCheckpointRequest(0, nil, o1.Note)); status != http.StatusNotFound {
		t.Fatalf("unknown log: %d", status)
	}
	impostor := newLog(t, "oa/clinic-1")
	i1 := impostor.append(t, entry(1))
	if status, _, _ := ws.post(t, translog.AddCheckpointRequest(5, nil, i1.Note)); status != http.StatusForbidden {
		t.Fatalf("another key: %d", status)
	}
	// Malformed, old above the checkpoint's size, too large: 400, 400, 413.
	for name, req := range map[string][]byte{
		"no old line":   []byte("5\n\n" + string(a8.Note)),
		"bad hash":      []byte("old 5\nnot-a-hash\n\n" + string(a8.Note)),
		"leading zero":  []byte("old 05\n\n" + string(a8.Note)),
		"no checkpoint": []byte("old 5\n"),
		"old above":     translog.AddCheckpointRequest(9, nil, a8.Note),
	} {
		if status, _, _ := ws.post(t, req); status != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", name, status)
		}
	}
	if status, _, _ := ws.post(t, bytes.Repeat([]byte("a"), translog.MaxAddCheckpointBytes+1)); status != http.StatusRequestEntityTooLarge {
		t.Fatalf("too large: %d", status)
	}
	// Nothing refused moved the witness: the honest next tree is cosigned.
	good, _ := translog.ProveConsistency(ctx, a.db, 5, 8)
	sigs, err = translog.SubmitCheckpoint(ctx, http.DefaultClient, ws.url, ws.key, 5, good, a8.Note)
	if err != nil {
		t.Fatalf("the honest next checkpoint: %v", err)
	}
	p, _ := translog.Prove(ctx, a.db, []byte(entry(6)))
	p.Checkpoint = append(append([]byte{}, a8.Note...), sigs...)
	if v, err := translog.VerifyProof(p.Marshal(), translog.Policy{Log: a.key.Verifier(), Witnesses: []note.Verifier{ws.key}, Quorum: 1}, nil); err != nil || len(v.Cosigners) != 1 {
		t.Fatalf("the cosigned proof: %v", err)
	}
	// What the operator is told names the log and the status, never the
	// request's bytes.
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for _, ev := range ws.events {
		if strings.Contains(ev.Reason, "sha256") || strings.Contains(ev.Reason, "not-a-hash") {
			t.Fatalf("an event carries request bytes: %+v", ev)
		}
	}
}

// TestWitnessKeyIsMadeOnceAndKept: the witness's key is made on first
// use (0600), read back the same after, and a key file of another name
// is refused; CosignatureOf refuses a cosignature by another witness.
func TestWitnessKeyIsMadeOnceAndKept(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "witness")
	s1, err := translog.LoadWitnessKey(dir, "w1.example")
	if err != nil {
		t.Fatal(err)
	}
	s2, err := translog.LoadWitnessKey(dir, "w1.example")
	if err != nil || s2.Verifier().String() != s1.Verifier().String() {
		t.Fatalf("reloaded: %v", err)
	}
	fi, err := os.Stat(filepath.Join(dir, translog.WitnessKeyFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi.Mode(), err)
	}
	pub, _ := os.ReadFile(filepath.Join(dir, translog.WitnessPublicKeyFile))
	if strings.TrimSpace(string(pub)) != s1.Verifier().String() {
		t.Fatalf("witness.pub %q", pub)
	}
	if _, err := translog.LoadWitnessKey(dir, "w2.example"); !blocking.Has(err, blocking.LogKeyInvalid) {
		t.Fatalf("another name: %v", err)
	}
	if _, err := translog.LoadWitnessKey(t.TempDir(), "bad name"); !blocking.Has(err, blocking.LogKeyInvalid) {
		t.Fatalf("a bad name: %v", err)
	}
	// A cosignature of another witness does not count as this one's.
	l := newLog(t, "oa/clinic-1")
	h := l.append(t, entry(1))
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	other, _ := torchwood.NewCosignatureSigner("w1.example", priv)
	signed, _ := note.Sign(&note.Note{Text: strings.SplitN(string(h.Note), "\n\n", 2)[0] + "\n"}, other)
	_, sigs, _ := bytes.Cut(signed, []byte("\n\n"))
	wv, _ := translog.ParseVerifierKey(s1.Verifier().String())
	if _, err := translog.CosignatureOf(h.Note, sigs, wv); !blocking.Has(err, blocking.LogWitnessQuorum) {
		t.Fatalf("another witness's cosignature: %v", err)
	}
}
