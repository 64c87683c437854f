package ledger

import (
	"context"
	"net/http"
	"path/filepath"

	"golang.org/x/mod/sumdb/note"

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
