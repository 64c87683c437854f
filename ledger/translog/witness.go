package translog

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/oa-dev/oa/blocking"
)

// Witness holds the checks of c2sp.org/tlog-witness's add-checkpoint: it
// cosigns (c2sp.org/tlog-cosignature, torchwood's CosignatureSigner) a
// checkpoint of a log it knows only when it verifies with the log's key
// and is consistent with the last checkpoint it cosigned of that log,
// kept in the store's witness_logs (one row a log, replaced only by a
// larger consistent tree). Handler is its HTTP face (`oa witness
// serve`), SubmitCheckpoint the client a host submits with.
type Witness struct {
	signer *torchwood.CosignatureSigner
	logs   map[string]note.Verifier // origin → log key
}

// NewWitness is a witness cosigning with signer the logs whose keys are
// given (each key's name is its log's origin).
func NewWitness(signer *torchwood.CosignatureSigner, logs ...note.Verifier) *Witness {
	w := &Witness{signer: signer, logs: map[string]note.Verifier{}}
	for _, l := range logs {
		w.logs[l.Name()] = l
	}
	return w
}

// ErrOldSize is AddCheckpoint's error when the caller's old size is not
// the size the witness last cosigned (tlog-witness's 409 Conflict); Size
// is the witness's.
type ErrOldSize struct{ Size int64 }

func (e *ErrOldSize) Error() string {
	return fmt.Sprintf("translog: the witness's last cosigned size is %d", e.Size)
}

// AddCheckpoint checks checkpoint (a signed note of a known log) against
// the witness's state inside tx — oldSize must be the size it last
// cosigned, proof the consistency proof from that tree — records it and
// returns the witness's cosignature lines (note.Sign's signature block).
// A fork (same size another root, a tree not extending the old one, a
// smaller one) is log_forked and changes nothing.
func (w *Witness) AddCheckpoint(ctx context.Context, tx Tx, oldSize int64, proof tlog.TreeProof, checkpoint []byte) ([]byte, error) {
	n, err := note.Open(checkpoint, note.VerifierList(w.verifiers()...))
	if err != nil {
		return nil, blocking.New(blocking.LogCheckpointUnverified, "the checkpoint is not signed by a log this witness knows")
	}
	c, err := torchwood.ParseCheckpoint(n.Text)
	if err != nil {
		return nil, blocking.New(blocking.LogCheckpointUnverified, "the signed note is not a checkpoint")
	}
	logKey, ok := w.logs[c.Origin]
	if !ok || !signedBy(n, logKey) {
		return nil, blocking.New(blocking.LogCheckpointUnverified, "the checkpoint of %s is not signed by that log's key", cut(c.Origin))
	}
	var old tlog.Tree
	var root []byte
	err = tx.QueryRowContext(ctx, `SELECT size, root FROM witness_logs WHERE origin = ?`, c.Origin).Scan(&old.N, &root)
	known := err == nil
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("translog: witness state: %w", err)
	}
	copy(old.Hash[:], root)
	if oldSize != old.N {
		return nil, &ErrOldSize{Size: old.N}
	}
	if err := CheckConsistency(old, c.Tree, proof); err != nil {
		return nil, err
	}
	if known {
		_, err = tx.ExecContext(ctx, `UPDATE witness_logs SET size = ?, root = ?, note = ? WHERE origin = ?`, c.N, c.Hash[:], checkpoint, c.Origin)
	} else {
		_, err = tx.ExecContext(ctx, `INSERT INTO witness_logs (origin, vkey, size, root, note) VALUES (?, ?, ?, ?, ?)`, c.Origin, fmt.Sprintf("%s+%08x", logKey.Name(), logKey.KeyHash()), c.N, c.Hash[:], checkpoint)
	}
	if err != nil {
		return nil, fmt.Errorf("translog: witness state: %w", err)
	}
	signed, err := note.Sign(&note.Note{Text: n.Text}, w.signer)
	if err != nil {
		return nil, err
	}
	_, sigs, _ := bytes.Cut(signed, []byte("\n\n"))
	return sigs, nil
}

func (w *Witness) verifiers() []note.Verifier {
	var out []note.Verifier
	for _, v := range w.logs {
		out = append(out, v)
	}
	return out
}

func signedBy(n *note.Note, v note.Verifier) bool {
	for _, s := range n.Sigs {
		if s.Name == v.Name() && s.Hash == v.KeyHash() {
			return true
		}
	}
	return false
}
