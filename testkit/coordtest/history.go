package coordtest

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/oa-dev/oa/bind"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/internal/canonical"
	"github.com/oa-dev/oa/internal/store"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/ledger"
)

// BuildHistory appends n finished runs of deployment, each with its
// signed, chained receipt, to the host at home, in bulk: the rows are
// what a seal writes (a run record with the host MAC naming its receipt,
// the receipt signed with the receipt key and chained, a receipt row
// naming its request, one head checkpoint signed at the end and its
// file), written with the same statements as ledger.SealRun, 10,000 runs
// per write transaction and the receipts signed on every core. It is how
// the history benchmarks get a host with a million runs in minutes.
func BuildHistory(ctx context.Context, home, deployment string, n int) error {
	h, err := host.Open(ctx, home)
	if err != nil {
		return err
	}
	defer h.Close()
	l := ledger.Open(h)
	secret, err := l.Secret()
	if err != nil {
		return err
	}
	signer, err := l.ReceiptSigner()
	if err != nil {
		return err
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	if err := l.PinReceiptKey(ctx, now); err != nil {
		return err
	}
	b, err := bind.Current(ctx, h, deployment)
	if err != nil {
		return err
	}
	raw, err := canonical.Marshal(b)
	if err != nil {
		return err
	}
	bindingDigest := ir.DigestBytes(raw)
	// A handle of its own on the host's database: the kit writes behind
	// the ledger, as the rows a seal writes, not through it.
	db, err := store.Open(ctx, filepath.Join(home, host.StateFile))
	if err != nil {
		return err
	}
	defer db.Close()
	var seq int64
	var prev string
	var last []byte
	err = db.QueryRowContext(ctx, `SELECT seq, record FROM receipts ORDER BY seq DESC LIMIT 1`).Scan(&seq, &last)
	switch {
	case err == nil:
		prev = ir.DigestBytes(store.Unpack(last))
	case !errors.Is(err, sql.ErrNoRows):
		return err
	}
	const batch = 10000
	type row struct {
		run     ledger.RunRecord
		rec     []byte
		sig     []byte
		state   []byte
		prevDig string
	}
	var lastRow *row
	for done := 0; done < n; {
		rows := make([]row, min(batch, n-done))
		for i := range rows {
			seq++
			r := &rows[i]
			r.run = ledger.RunRecord{RunID: runID(), Deployment: deployment, RequestID: fmt.Sprintf("history-%d", seq), Workflow: "append_triage_note",
				Fingerprint: fingerprint(secret, seq), Attempt: 1, Status: ledger.RunTerminal,
				Outcome: contract.OutcomeDone, Reason: contract.ReasonVerified, Completed: []string{"append"}, Approved: []string{},
				Evidence: []string{"note_present"}, Digests: map[string]string{"append": prev}, PlanDigest: b.PlanDigest, Binding: bindingDigest,
				Owner: ledger.RunOwner{PID: 1, Start: "history"}, CreatedAt: now, UpdatedAt: now}
			rec := ledger.Receipt{Type: ledger.ReceiptType, Host: h.Policy.Host, Seq: seq, Prev: prev, RunID: r.run.RunID, Deployment: deployment, Job: r.run.Workflow,
				Attempt: 1, Fingerprint: r.run.Fingerprint, Outcome: r.run.Outcome, Reason: r.run.Reason, Evidence: r.run.Evidence,
				EvidenceDigests: r.run.Digests, PlanDigest: b.PlanDigest, BindingDigest: bindingDigest, At: now}
			if r.rec, err = canonical.Marshal(rec); err != nil {
				return err
			}
			r.prevDig, prev = prev, ir.DigestBytes(r.rec)
			r.run.Receipt = prev
			if r.state, err = r.run.Encode(secret); err != nil {
				return err
			}
		}
		var wg sync.WaitGroup
		workers := runtime.GOMAXPROCS(0)
		errs := make([]error, workers)
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < len(rows); i += workers {
					sig, err := signer.SignBytes(rows[i].rec)
					if err != nil {
						errs[w] = err
					}
					rows[i].sig = sig
				}
			}()
		}
		wg.Wait()
		for _, e := range errs {
			if e != nil {
				return e
			}
		}
		err := db.Write(ctx, "build history", func(tx *sql.Tx) error {
			runStmt, err := tx.PrepareContext(ctx, `INSERT INTO runs (run_id, deployment, request_id, state) VALUES (?, ?, ?, ?)`)
			if err != nil {
				return err
			}
			recStmt, err := tx.PrepareContext(ctx, `INSERT INTO receipts (`+ledger.ReceiptColumns+`, deployment, request_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`)
			if err != nil {
				return err
			}
			for i := range rows {
				r := &rows[i]
				if _, err := runStmt.ExecContext(ctx, r.run.RunID, deployment, r.run.RequestID, store.Pack(r.state)); err != nil {
					return err
				}
				if _, err := recStmt.ExecContext(ctx, seq-int64(len(rows)-1-i), r.run.RunID, 1, r.prevDig, r.rec, r.sig, deployment, r.run.RequestID); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		lastRow = &rows[len(rows)-1]
		done += len(rows)
	}
	if lastRow == nil {
		return nil
	}
	var runs int64
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM runs`).Scan(&runs); err != nil {
		return err
	}
	cp, err := canonical.Marshal(ledger.Checkpoint{Type: ledger.CheckpointType, Host: h.Policy.Host, Seq: seq, Head: prev, Runs: runs, Deployment: deployment, ReceiptKey: signer.KeyID(), At: now})
	if err != nil {
		return err
	}
	sig, err := signer.SignBytes(cp)
	if err != nil {
		return err
	}
	v := store.Version{Kind: store.KindCheckpoint, Key: store.CheckpointKey, Seq: seq, Record: cp, Signature: sig}
	packed := v
	packed.Record = store.Pack(cp)
	if err := db.Write(ctx, "build history checkpoint", func(tx *sql.Tx) error { return store.InsertVersionTx(ctx, tx, packed) }); err != nil {
		return err
	}
	return host.KeepSignedCopy(home, ledger.CheckpointFile, "seq", &v)
}

// runID is a run id of the coordinator's form.
func runID() string {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		panic("coordtest: no randomness: " + err.Error())
	}
	return "run_" + hex.EncodeToString(b)
}

// fingerprint is a keyed fingerprint of the form the coordinator stores,
// over the history run's number (the history has no inputs).
func fingerprint(secret []byte, seq int64) string {
	m := hmac.New(sha256.New, secret)
	fmt.Fprintf(m, "history:%d", seq)
	return "hmac-sha256:" + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}
