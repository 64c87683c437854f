package translog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// StoreCosignature keeps a witness's cosignature lines of the log's
// checkpoint of size n (checked first with CosignatureOf), under the
// witness's public key (vkey); a second copy is ignored.
func StoreCosignature(ctx context.Context, tx Tx, n int64, vkey string, sigs []byte) error {
	if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO log_cosignatures (size, witness, sigs) VALUES (?, ?, ?)`, n, vkey, sigs); err != nil {
		return fmt.Errorf("translog: store cosignature: %w", err)
	}
	return nil
}

// CosignedSize is the size of the largest checkpoint the witness with
// public key vkey cosigned (0 when none).
func CosignedSize(ctx context.Context, q Querier, vkey string) (int64, error) {
	var n sql.NullInt64
	if err := q.QueryRowContext(ctx, `SELECT MAX(size) FROM log_cosignatures WHERE witness = ?`, vkey).Scan(&n); err != nil {
		return 0, fmt.Errorf("translog: read cosignatures: %w", err)
	}
	return n.Int64, nil
}

// CosignedHead returns the log's newest checkpoint that any witness
// cosigned, its Note the signed checkpoint with every witness's
// cosignature lines after the log's signature (one signed note, as
// c2sp.org/tlog-cosignature shows it), and how many witnesses cosigned
// it; nil when no witness cosigned any.
func CosignedHead(ctx context.Context, q Querier) (*Head, int, error) {
	var n sql.NullInt64
	if err := q.QueryRowContext(ctx, `SELECT MAX(size) FROM log_cosignatures`).Scan(&n); err != nil {
		return nil, 0, fmt.Errorf("translog: read cosignatures: %w", err)
	}
	if !n.Valid {
		return nil, 0, nil
	}
	h, err := CheckpointAt(ctx, q, n.Int64)
	if err != nil || h == nil {
		return nil, 0, errors.Join(err, fmt.Errorf("translog: a cosigned checkpoint of size %d is missing", n.Int64))
	}
	rows, err := q.QueryContext(ctx, `SELECT sigs FROM log_cosignatures WHERE size = ? ORDER BY witness`, n.Int64)
	if err != nil {
		return nil, 0, fmt.Errorf("translog: read cosignatures: %w", err)
	}
	defer rows.Close()
	note := append([]byte{}, h.Note...)
	count := 0
	for rows.Next() {
		var sigs []byte
		if err := rows.Scan(&sigs); err != nil {
			return nil, 0, fmt.Errorf("translog: read cosignatures: %w", err)
		}
		note = append(note, sigs...)
		count++
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("translog: read cosignatures: %w", err)
	}
	h.Note = note
	return h, count, nil
}
