package ledger

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/ledger/translog"
)

// The host's transparency log of receipts (ledger/translog, issue 41):
// leaf i is the digest of receipt i+1, appended in the receipt's own
// write transaction (seal), so no receipt is ever stored without its
// leaf. Receipts sealed before the log existed are added, in chain
// order, by the first seal after (once, in that seal's transaction).

// appendLeaf appends receipt r's digest to the log inside tx, with the
// digests of the receipts before it the log lacks, and signs the new
// checkpoint with key.
func appendLeaf(ctx context.Context, tx *sql.Tx, key *translog.Key, r *ReceiptRow) error {
	size, err := translog.Size(ctx, tx)
	if err != nil {
		return err
	}
	if size > r.Seq-1 {
		return blocking.New(blocking.LogChainDisagree, "the log holds %d leaves but receipt #%d is the chain's next", size, r.Seq)
	}
	var entries [][]byte
	if size < r.Seq-1 {
		rows, err := tx.QueryContext(ctx, `SELECT seq, record FROM receipts WHERE seq > ? AND seq < ? ORDER BY seq`, size, r.Seq)
		if err != nil {
			return fmt.Errorf("ledger: log catch-up: %w", err)
		}
		defer rows.Close()
		next := size + 1
		for rows.Next() {
			var seq int64
			var rec []byte
			if err := rows.Scan(&seq, &rec); err != nil {
				return fmt.Errorf("ledger: log catch-up: %w", err)
			}
			if seq != next {
				return blocking.New(blocking.LogChainDisagree, "receipt #%d is missing from the chain the log catches up with", next)
			}
			entries = append(entries, []byte(ir.DigestBytes(rec)))
			next++
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("ledger: log catch-up: %w", err)
		}
		if next != r.Seq {
			return blocking.New(blocking.LogChainDisagree, "receipt #%d is missing from the chain the log catches up with", next)
		}
	}
	entries = append(entries, []byte(ir.DigestBytes(r.Record)))
	_, err = translog.Append(ctx, tx, key, entries...)
	return err
}

// receiptDigest is a receipt's digest as ir.DigestBytes writes it.
var receiptDigest = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// ProveReceipt returns the c2sp.org/tlog-proof that the receipt whose
// digest is digest ("sha256:HEX") is in the host's log, against the log's
// newest signed checkpoint.
func (l *Ledger) ProveReceipt(ctx context.Context, digest string) (*translog.Proof, error) {
	if !receiptDigest.MatchString(digest) {
		return nil, blocking.New(blocking.LogEntryUnknown, "%q is not a receipt digest (sha256:HEX)", digest)
	}
	return translog.Prove(ctx, l.db, []byte(digest))
}

// LogHead is the host's log's newest signed checkpoint (nil: no receipt
// is in the log yet).
func (l *Ledger) LogHead(ctx context.Context) (*translog.Head, error) {
	return translog.HeadOf(ctx, l.db)
}

// ReadLogTile is the c2sp.org/tlog-tiles tile of the host's log at path.
func (l *Ledger) ReadLogTile(ctx context.Context, path string) ([]byte, error) {
	return translog.ReadTile(ctx, l.db, path)
}

// ProveLogConsistency is the proof that the host's log's tree of size n
// is a prefix of its tree of size m (translog.ProveConsistency), the
// proof a host publishes with its checkpoint to its fleet.
func (l *Ledger) ProveLogConsistency(ctx context.Context, n, m int64) (tlog.TreeProof, error) {
	return translog.ProveConsistency(ctx, l.db, n, m)
}
