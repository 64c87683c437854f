package main

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/oa-dev/oa/internal/store"
	"github.com/oa-dev/oa/ledger/translog"
)

// TestWitnessServe: oa witness serve, a real process on loopback, makes
// its key on first use (oa witness key prints it), cosigns a log's
// checkpoints as it grows over real HTTP, answers a stale old size with
// 409 and the size it knows, refuses another root at that size, logs
// each request on stderr with the log, size and status only, and ends
// cleanly on SIGTERM.
func TestWitnessServe(t *testing.T) {
	ctx := context.Background()
	oa := oaBinary(t)
	home := t.TempDir()
	db, err := store.Open(ctx, filepath.Join(home, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	key, err := translog.LoadKey(home, translog.Origin("clinic-1"))
	if err != nil {
		t.Fatal(err)
	}
	var heads []*translog.Head
	for i := range 6 {
		err := db.Write(ctx, "append", func(tx *sql.Tx) error {
			h, err := translog.Append(ctx, tx, key, fmt.Appendf(nil, "sha256:%064x", i))
			heads = append(heads, h)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	_, errOut, code := runCLI(t, "witness", "serve", "--state", t.TempDir())
	wantExit(t, "serve without a log", code, 2, "", errOut)
	wantHas(t, "serve without a log", errOut, "--log-key")
	state := filepath.Join(t.TempDir(), "witness")
	cmd := exec.Command(oa, "witness", "serve", "--listen", "127.0.0.1:0", "--state", state, "--name", "witness.example", "--log-key", filepath.Join(home, translog.PublicKeyFile))
	cmd.Env = append(cmd.Environ(), "OA_HOME="+t.TempDir())
	stdout, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(stdout)
	lines.Scan()
	ready := lines.Text()
	lines.Scan()
	vkey, _ := strings.CutPrefix(lines.Text(), "key: ")
	_, url, ok := strings.Cut(ready, " on ")
	if !ok {
		t.Fatalf("ready line %q", ready)
	}
	base := strings.TrimSuffix(url, translog.AddCheckpointPath)
	out, _, code := runCLI(t, "witness", "key", "--state", state)
	wantExit(t, "witness key", code, 0, out, "")
	if got := strings.TrimSpace(out); got != vkey {
		t.Fatalf("witness key printed %q, want the served %q", got, vkey)
	}
	wv, err := translog.ParseVerifierKey(vkey)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := translog.SubmitCheckpoint(ctx, http.DefaultClient, base, wv, 0, nil, heads[2].Note); err != nil {
		t.Fatalf("first checkpoint: %v", err)
	}
	var stale *translog.ErrOldSize
	if _, err := translog.SubmitCheckpoint(ctx, http.DefaultClient, base, wv, 0, nil, heads[5].Note); !errors.As(err, &stale) {
		t.Fatalf("stale old size: error %v, want an ErrOldSize", err)
	}
	if stale.Size != 3 {
		t.Fatalf("stale old size: the witness holds size %d, want 3", stale.Size)
	}
	proof, err := translog.ProveConsistency(ctx, db, 3, 6)
	if err != nil {
		t.Fatal(err)
	}
	sigs, err := translog.SubmitCheckpoint(ctx, http.DefaultClient, base, wv, 3, proof, heads[5].Note)
	if err != nil {
		t.Fatalf("next checkpoint: %v", err)
	}
	if _, err := translog.CosignatureOf(heads[5].Note, sigs, wv); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("after SIGTERM: %v\n%s", err, stderr.String())
	}
	log := stderr.String()
	for _, want := range []string{"oa/clinic-1 size 3: 200 cosigned", "oa/clinic-1 size 6: 409", "oa/clinic-1 size 6: 200 cosigned"} {
		if !strings.Contains(log, want) {
			t.Errorf("stderr lacks %q:\n%s", want, log)
		}
	}
	for _, raw := range []string{"sha256", "—"} {
		if strings.Contains(log, raw) {
			t.Errorf("stderr carries request bytes (%q):\n%s", raw, log)
		}
	}
}
