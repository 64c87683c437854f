package audit

import (
	"context"
	"database/sql"

	"github.com/oa-dev/oa/admit"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/internal/store"
	"github.com/oa-dev/oa/ledger"
)

// Dump is every signed row of a host's database and the coordinator's
// runs and receipts, byte for byte: what an audit bundle carries so a
// verifier elsewhere can rebuild the store and judge it with the same
// code the host uses. Attention items and used request states are left
// out: no chain link rests on them. Each owner reads and restores its
// own tables (admit, the ledger, the store's versions); the bundle,
// above them all, puts them together.
type Dump struct {
	Admissions  []admit.AdmissionRow  `json:"admissions"`
	Revocations []admit.RevocationRow `json:"revocations"`
	Versions    []store.Version       `json:"versions"`
	Runs        []ledger.RunRow       `json:"runs"`
	Receipts    []ledger.ReceiptRow   `json:"receipts"`
}

// streamDump reads the whole database in one read transaction so every
// table is seen at one moment, but holds only the rows that do not grow
// with history: the admissions, revocations and versions other than
// checkpoints are handed to head in d (Runs and Receipts nil), then every
// checkpoint (a version of store.KindCheckpoint: one per sealed receipt)
// to checkpoint, every run to run and every receipt to receipt, one row
// at a time. Memory stays bounded however many
// runs the host has made.
func streamDump(ctx context.Context, h *host.Host, head func(d *Dump) error, checkpoint func(*store.Version) error, run func(*ledger.RunRow) error, receipt func(*ledger.ReceiptRow) error) error {
	return h.Snapshot(ctx, func(tx *sql.Tx) error {
		var d Dump
		var err error
		if d.Admissions, d.Revocations, err = admit.RowsIn(ctx, tx); err != nil {
			return err
		}
		if d.Versions, err = store.VersionsButCheckpointsIn(ctx, tx); err != nil {
			return err
		}
		if err := head(&d); err != nil {
			return err
		}
		if err := store.EachCheckpointIn(ctx, tx, checkpoint); err != nil {
			return err
		}
		if err := ledger.EachRunIn(ctx, tx, run); err != nil {
			return err
		}
		return ledger.EachReceiptIn(ctx, tx, receipt)
	})
}

// restoreStream writes d into db's empty tables in one write transaction,
// every row as it is (nothing is judged here: the stages that read the
// rows verify them), with d's runs and receipts ignored and read instead
// from runs and receipts, and more versions (the checkpoints) read from
// versions, a row at a time: memory stays bounded whatever the history's
// length. It refuses a database that holds any of those rows.
func restoreStream(ctx context.Context, db *store.DB, d *Dump, versions store.RowSource[store.Version], runs store.RowSource[ledger.RunRow], receipts store.RowSource[ledger.ReceiptRow]) error {
	return db.Restore(ctx, func(tx *sql.Tx) error {
		if err := admit.RestoreIn(ctx, tx, d.Admissions, d.Revocations); err != nil {
			return err
		}
		if err := store.RestoreVersionsIn(ctx, tx, d.Versions, versions); err != nil {
			return err
		}
		return ledger.RestoreIn(ctx, tx, runs, receipts)
	})
}
