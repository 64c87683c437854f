package store

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
)

// runCount is what a handle remembers of the runs table's size (see
// CountRuns): count rows up to rowid mark.
type runCount struct {
	mu    sync.Mutex
	known bool
	mark  int64
	count int64
}

// CountRuns returns how many rows the runs table holds as tx sees it,
// without reading the whole table each time: runs are never removed, so
// the rows after the last count this handle remembered are counted and
// added to it (the first count of a handle reads them all). remember
// makes the count the one to start from next time; call it only once tx
// committed, so a count that saw rows a rollback took back is never kept.
//
// A row removed behind the mark (tampering) leaves the count above the
// table's: the signed head then claims more runs than the store holds,
// which the chain check refuses (receipt_runs_disagree), as it should.
func (db *DB) CountRuns(ctx context.Context, tx *sql.Tx) (n int64, remember func(), err error) {
	db.runs.mu.Lock()
	known, mark, count := db.runs.known, db.runs.mark, db.runs.count
	db.runs.mu.Unlock()
	if !known {
		mark, count = 0, 0
	}
	var added, top int64
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*), coalesce(MAX(rowid), ?) FROM runs WHERE rowid > ?`, mark, mark).Scan(&added, &top); err != nil {
		return 0, nil, fmt.Errorf("store: count runs: %w", err)
	}
	n = count + added
	return n, func() { db.RememberRuns(n, top) }, nil
}

// RememberRuns records that the runs table held count rows, the highest
// with rowid mark, as one committed snapshot read them, so that CountRuns
// counts only the rows after mark; a later mark already remembered is
// kept. Rows are only ever added, each with a rowid above every row
// committed before it, so the rows up to mark stay count. A coordinator's
// session start counts the runs anyway (ledger.CheckCounts): remembered,
// its first seal does not count a long history again inside the write
// lock (1,000,000 runs: ~0.6 s, docs/PERFORMANCE.md).
func (db *DB) RememberRuns(count, mark int64) {
	db.runs.mu.Lock()
	defer db.runs.mu.Unlock()
	if !db.runs.known || mark >= db.runs.mark {
		db.runs.known, db.runs.mark, db.runs.count = true, mark, count
	}
}
