package ledger

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"net/http"
	"path/filepath"

	"golang.org/x/mod/sumdb/note"

	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/internal/store"
	"github.com/oa-dev/oa/ledger/translog"
)

// WitnessDB is the file of a witness's state in its state folder.
const WitnessDB = "witness.db"

// WitnessServer is a c2sp.org/tlog-witness witness (`oa witness serve`):
// its key in its state folder (translog.LoadWitnessKey), its state in
// that folder's SQLite store (witness_logs), its add-checkpoint handler.
type WitnessServer struct {
	// Name and VerifierKey are the witness's name and its
	// c2sp.org/tlog-cosignature public key, the line hosts name it by.
	Name, VerifierKey string
	// Handler serves add-checkpoint.
	Handler http.Handler
	db      *store.DB
}

// OpenWitness opens the witness whose state folder is dir (made on
// first use, with its key named name), cosigning the logs whose keys are
// given; report is told of each request (translog.Witness.Handler).
func OpenWitness(ctx context.Context, dir, name string, logs []note.Verifier, report func(translog.WitnessEvent)) (*WitnessServer, error) {
	signer, err := translog.LoadWitnessKey(dir, name)
	if err != nil {
		return nil, err
	}
	db, err := store.Open(ctx, filepath.Join(dir, WitnessDB))
	if err != nil {
		return nil, err
	}
	w := translog.NewWitness(signer, logs...)
	return &WitnessServer{Name: signer.Name(), VerifierKey: signer.Verifier().String(), Handler: w.Handler(db, report), db: db}, nil
}

// Close closes the witness's store.
func (w *WitnessServer) Close() error { return w.db.Close() }

// WitnessResult is what one submission to a witness came to: the size of
// the newest checkpoint that witness has cosigned (0: none), and whether
// this submission got it a new cosignature.
type WitnessResult struct {
	Cosigned int64
	New      bool
}

// Submission failures, in fixed words for the operator (never the
// witness's answer or a transport error's text).
var (
	// ErrWitnessAhead: the witness has cosigned a larger tree of this
	// host's log than the log holds — the log was rolled back, or
	// another host signs with this host's log key.
	ErrWitnessAhead = errors.New("the witness has cosigned a larger tree of this log than the log holds")
	// ErrWitnessRefused: the witness answered another status than 200 or
	// 409 (its status is in the *translog.ErrWitnessStatus joined).
	ErrWitnessRefused = errors.New("the witness refused the checkpoint")
	// ErrWitnessUnreachable: no answer (connection, timeout, or an
	// answer too large or not verifying).
	ErrWitnessUnreachable = errors.New("the witness could not be reached or did not answer a cosignature")
)

// SubmitCheckpoint submits the host's newest checkpoint to witness w
// (c2sp.org/tlog-witness add-checkpoint, translog.SubmitCheckpoint),
// from the size that witness last cosigned here, unless it cosigned it
// already; a 409 is retried once from the size the witness names. The
// cosignature, checked with the witness's key, is stored with the log
// (log_cosignatures), where receipts prove and audit export find it.
// hc bounds each request's time.
func (l *Ledger) SubmitCheckpoint(ctx context.Context, hc *http.Client, w host.Witness) (WitnessResult, error) {
	db := l.db
	head, err := translog.HeadOf(ctx, db)
	if err != nil || head == nil {
		return WitnessResult{}, err
	}
	known, err := translog.CosignedSize(ctx, db, w.Key)
	if err != nil {
		return WitnessResult{}, err
	}
	if known >= head.N {
		return WitnessResult{Cosigned: known}, nil
	}
	for try := 0; ; try++ {
		if known > head.N {
			return WitnessResult{}, ErrWitnessAhead
		}
		proof, err := translog.ProveConsistency(ctx, db, known, head.N)
		if err != nil {
			return WitnessResult{}, err
		}
		sigs, err := translog.SubmitCheckpoint(ctx, hc, w.URL, w.Verifier(), known, proof, head.Note)
		var stale *translog.ErrOldSize
		var status *translog.ErrWitnessStatus
		switch {
		case errors.As(err, &stale) && try == 0:
			known = stale.Size
			continue
		case errors.As(err, &stale) && stale.Size > head.N:
			return WitnessResult{}, ErrWitnessAhead
		case errors.As(err, &status) || errors.As(err, &stale):
			return WitnessResult{}, errors.Join(ErrWitnessRefused, err)
		case err != nil:
			return WitnessResult{}, errors.Join(ErrWitnessUnreachable, err)
		}
		err = db.Write(ctx, "log cosignature", func(tx *sql.Tx) error {
			return translog.StoreCosignature(ctx, tx, head.N, w.Key, sigs)
		})
		if err != nil {
			return WitnessResult{}, err
		}
		return WitnessResult{Cosigned: head.N, New: true}, nil
	}
}

// LogCosigned is the host's newest checkpoint its witnesses cosigned,
// with their cosignatures (translog.CosignedHead), and how many of the
// policy's witnesses' cosignatures verify on it; nil when none did.
func (l *Ledger) LogCosigned(ctx context.Context) (*translog.Head, []string, error) {
	head, _, err := translog.CosignedHead(ctx, l.db)
	if err != nil || head == nil {
		return nil, nil, err
	}
	return head, l.Cosigners(head.Note), nil
}

// Cosigners are the names of the policy's witnesses whose cosignatures
// of checkpoint verify.
func (l *Ledger) Cosigners(checkpoint []byte) []string {
	wit := l.h.Policy.Witnessing
	if wit == nil {
		return nil
	}
	var out []string
	for _, name := range wit.Names() {
		if _, err := translog.CosignatureOf(checkpoint, signatureBlock(checkpoint), wit.Witnesses[name].Verifier()); err == nil {
			out = append(out, name)
		}
	}
	return out
}

// signatureBlock is a signed note's signature lines.
func signatureBlock(n []byte) []byte {
	_, sigs, _ := bytes.Cut(n, []byte("\n\n"))
	return sigs
}
