package translog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/oa-dev/oa/blocking"
)

// Querier reads the log: the store's handle, or a transaction of it.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Tx is a write transaction of the store the log is kept in.
type Tx interface {
	Querier
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// Head is the log's newest signed checkpoint: its tree and its
// signed-note bytes (c2sp.org/tlog-checkpoint).
type Head struct {
	tlog.Tree
	Note []byte
}

// HeadOf returns the log's newest checkpoint, nil when the log is empty.
func HeadOf(ctx context.Context, q Querier) (*Head, error) {
	var h Head
	var root []byte
	err := q.QueryRowContext(ctx, `SELECT size, root, note FROM log_checkpoints ORDER BY size DESC LIMIT 1`).Scan(&h.N, &root, &h.Note)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("translog: read head: %w", err)
	}
	copy(h.Hash[:], root)
	return &h, nil
}

// CheckpointAt returns the signed checkpoint of size n, nil when the log
// signed none of that size.
func CheckpointAt(ctx context.Context, q Querier, n int64) (*Head, error) {
	var h Head
	var root []byte
	err := q.QueryRowContext(ctx, `SELECT size, root, note FROM log_checkpoints WHERE size = ?`, n).Scan(&h.N, &root, &h.Note)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("translog: read checkpoint: %w", err)
	}
	copy(h.Hash[:], root)
	return &h, nil
}

// Size is the number of leaves the log holds (its newest checkpoint's
// size; 0 when empty).
func Size(ctx context.Context, q Querier) (int64, error) {
	h, err := HeadOf(ctx, q)
	if err != nil || h == nil {
		return 0, err
	}
	return h.N, nil
}

// Append adds entries as the log's next leaves inside tx, stores their
// stored hashes (tlog.StoredHashes) and one checkpoint of the new size
// signed with key, and returns it. Nothing is kept unless tx commits, so
// the caller's rows and the leaves are one write.
func Append(ctx context.Context, tx Tx, key *Key, entries ...[]byte) (*Head, error) {
	n, err := Size(ctx, tx)
	if err != nil {
		return nil, err
	}
	r := hashReader(ctx, tx)
	for _, e := range entries {
		hashes, err := tlog.StoredHashes(n, e, r)
		if err != nil {
			return nil, fmt.Errorf("translog: append: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO log_leaves (idx, entry) VALUES (?, ?)`, n, e); err != nil {
			return nil, fmt.Errorf("translog: append leaf %d: %w", n, err)
		}
		base := tlog.StoredHashIndex(0, n)
		for i, h := range hashes {
			if _, err := tx.ExecContext(ctx, `INSERT INTO log_hashes (idx, hash) VALUES (?, ?)`, base+int64(i), h[:]); err != nil {
				return nil, fmt.Errorf("translog: append hash: %w", err)
			}
		}
		n++
	}
	root, err := tlog.TreeHash(n, r)
	if err != nil {
		return nil, fmt.Errorf("translog: tree hash: %w", err)
	}
	tree := tlog.Tree{N: n, Hash: root}
	signed, err := note.Sign(&note.Note{Text: torchwood.Checkpoint{Origin: key.Origin(), Tree: tree}.String()}, key.signer)
	if err != nil {
		return nil, fmt.Errorf("translog: sign checkpoint: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO log_checkpoints (size, root, note) VALUES (?, ?, ?)`, n, root[:], signed); err != nil {
		return nil, fmt.Errorf("translog: store checkpoint: %w", err)
	}
	return &Head{Tree: tree, Note: signed}, nil
}

// hashReader reads stored hashes, one prepared point read each (the
// store's connections keep the statement prepared).
func hashReader(ctx context.Context, q Querier) tlog.HashReader {
	return tlog.HashReaderFunc(func(indexes []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(indexes))
		for i, idx := range indexes {
			var b []byte
			if err := q.QueryRowContext(ctx, `SELECT hash FROM log_hashes WHERE idx = ?`, idx).Scan(&b); err != nil {
				if errors.Is(err, sql.ErrNoRows) {
					return nil, blocking.New(blocking.LogChainDisagree, "the log's stored hash %d is missing", idx)
				}
				return nil, fmt.Errorf("translog: read hash %d: %w", idx, err)
			}
			if len(b) != tlog.HashSize {
				return nil, blocking.New(blocking.LogChainDisagree, "the log's stored hash %d is not a hash", idx)
			}
			copy(out[i][:], b)
		}
		return out, nil
	})
}

// IndexOf returns the index of the leaf whose entry is entry
// (log_entry_unknown when none is).
func IndexOf(ctx context.Context, q Querier, entry []byte) (int64, error) {
	var idx int64
	err := q.QueryRowContext(ctx, `SELECT idx FROM log_leaves WHERE entry = ?`, entry).Scan(&idx)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, blocking.New(blocking.LogEntryUnknown, "no leaf of the log is %s", cut(string(entry)))
	}
	if err != nil {
		return 0, fmt.Errorf("translog: find entry: %w", err)
	}
	return idx, nil
}

// EntryAt returns leaf idx's entry, nil when the log holds no such leaf.
func EntryAt(ctx context.Context, q Querier, idx int64) ([]byte, error) {
	var e []byte
	err := q.QueryRowContext(ctx, `SELECT entry FROM log_leaves WHERE idx = ?`, idx).Scan(&e)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("translog: read entry: %w", err)
	}
	return e, nil
}

// Prove returns the c2sp.org/tlog-proof that entry is in the log, the
// entry itself in its extra line: against the newest checkpoint its
// witnesses cosigned (with their cosignatures) when that holds the
// entry, else against the newest checkpoint.
func Prove(ctx context.Context, q Querier, entry []byte) (*Proof, error) {
	idx, err := IndexOf(ctx, q, entry)
	if err != nil {
		return nil, err
	}
	head, _, err := CosignedHead(ctx, q)
	if err != nil {
		return nil, err
	}
	if head == nil || head.N <= idx {
		if head, err = HeadOf(ctx, q); err != nil {
			return nil, err
		}
	}
	if head == nil || head.N <= idx {
		return nil, blocking.New(blocking.LogChainDisagree, "leaf %d has no signed checkpoint", idx)
	}
	// The hashes of a tree of head.N leaves never change once stored, so
	// these reads need no snapshot.
	p, err := tlog.ProveRecord(head.N, idx, hashReader(ctx, q))
	if err != nil {
		return nil, fmt.Errorf("translog: prove: %w", err)
	}
	return &Proof{Extra: entry, Index: idx, Hashes: p, Checkpoint: head.Note}, nil
}

// ProveConsistency returns the proof that the log's tree of size n is a
// prefix of its tree of size m (tlog.ProveTree), n ≤ m ≤ the log's size.
func ProveConsistency(ctx context.Context, q Querier, n, m int64) (tlog.TreeProof, error) {
	if n < 0 || m < n {
		return nil, blocking.New(blocking.LogForked, "no consistency proof from size %d to size %d", n, m)
	}
	if n == 0 || n == m {
		return tlog.TreeProof{}, nil
	}
	p, err := tlog.ProveTree(m, n, hashReader(ctx, q))
	if err != nil {
		return nil, fmt.Errorf("translog: prove consistency: %w", err)
	}
	return p, nil
}

// CheckConsistency holds newer to older: a tree of one size with another
// root, a smaller tree, or one the proof does not show extends older is a
// fork (log_forked).
func CheckConsistency(older, newer tlog.Tree, proof tlog.TreeProof) error {
	switch {
	case newer.N < older.N:
		return blocking.New(blocking.LogForked, "the checkpoint of size %d is smaller than the one of size %d seen before: the log was rolled back", newer.N, older.N)
	case newer.N == older.N && newer.Hash != older.Hash:
		return blocking.New(blocking.LogForked, "two checkpoints of size %d have different roots", newer.N)
	case older.N == 0 || newer.N == older.N:
		return nil
	}
	if err := tlog.CheckTree(proof, newer.N, newer.Hash, older.N, older.Hash); err != nil {
		return blocking.New(blocking.LogForked, "the tree of size %d does not extend the tree of size %d seen before", newer.N, older.N)
	}
	return nil
}
