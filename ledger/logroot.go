package ledger

import (
	"context"
	"fmt"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/oa-dev/oa/ir"
)

// ReceiptsRoot is the RFC 6962 root of the tree whose leaf i is the
// digest of the host's receipt i+1, over its first n receipts: what a
// log checkpoint of size n must commit to. It reads the receipts a row
// at a time and keeps one hash per level (memory O(log n)); ok is false
// when the host holds fewer than n receipts.
func (l *Ledger) ReceiptsRoot(ctx context.Context, n int64) (root tlog.Hash, ok bool, err error) {
	rows, err := l.db.QueryContext(ctx, `SELECT seq, record FROM receipts WHERE seq <= ? ORDER BY seq`, n)
	if err != nil {
		return root, false, fmt.Errorf("ledger: receipts root: %w", err)
	}
	defer rows.Close()
	type node struct {
		h    tlog.Hash
		size int64
	}
	var stack []node
	var count int64
	for rows.Next() {
		var seq int64
		var rec []byte
		if err := rows.Scan(&seq, &rec); err != nil {
			return root, false, fmt.Errorf("ledger: receipts root: %w", err)
		}
		if seq != count+1 {
			return root, false, nil
		}
		count++
		stack = append(stack, node{tlog.RecordHash([]byte(ir.DigestBytes(rec))), 1})
		for len(stack) > 1 && stack[len(stack)-1].size == stack[len(stack)-2].size {
			l, r := stack[len(stack)-2], stack[len(stack)-1]
			stack = append(stack[:len(stack)-2], node{tlog.NodeHash(l.h, r.h), l.size + r.size})
		}
	}
	if err := rows.Err(); err != nil {
		return root, false, fmt.Errorf("ledger: receipts root: %w", err)
	}
	if count != n || n == 0 {
		return root, false, nil
	}
	root = stack[len(stack)-1].h
	for i := len(stack) - 2; i >= 0; i-- {
		root = tlog.NodeHash(stack[i].h, root)
	}
	return root, true, nil
}
