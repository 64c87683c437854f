package store

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
)

// rowCount is what a handle remembers of one append-only table's size
// (see CountRows): count rows up to rowid mark.
type rowCount struct {
	known bool
	mark  int64
	count int64
}

// rowCounts is a handle's rowCount of each table counted through it.
type rowCounts struct {
	mu sync.Mutex
	of map[string]rowCount
}

// CountRows returns how many rows the append-only table holds as tx sees
// it, without reading the whole table each time: its rows are never
// removed, so the rows after the last count this handle remembered are
// counted and added to it (the first count of a handle reads them all).
// remember makes the count the one to start from next time; call it only
// once tx committed, so a count that saw rows a rollback took back is
// never kept. The table's owner names it (the ledger counts its runs).
//
// A row removed behind the mark (tampering) leaves the count above the
// table's: the owner's signed records then claim more rows than the
// store holds, which its checks refuse.
func (db *DB) CountRows(ctx context.Context, tx *sql.Tx, table string) (n int64, remember func(), err error) {
	if !tableName.MatchString(table) {
		return 0, nil, fmt.Errorf("store: count %q: not a table name", table)
	}
	db.counts.mu.Lock()
	c := db.counts.of[table]
	db.counts.mu.Unlock()
	if !c.known {
		c.mark, c.count = 0, 0
	}
	var added, top int64
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*), coalesce(MAX(rowid), ?) FROM `+table+` WHERE rowid > ?`, c.mark, c.mark).Scan(&added, &top); err != nil {
		return 0, nil, fmt.Errorf("store: count %s: %w", table, err)
	}
	n = c.count + added
	return n, func() { db.RememberRows(table, n, top) }, nil
}

// RememberRows records that the append-only table held count rows, the
// highest with rowid mark, as one committed snapshot read them, so that
// CountRows counts only the rows after mark; a later mark already
// remembered is kept. Rows are only ever added, each with a rowid above
// every row committed before it, so the rows up to mark stay count: an
// owner that counts the table anyway (the ledger at a coordinator's
// session start) remembers it, so that its next CountRows does not count
// a long history again.
func (db *DB) RememberRows(table string, count, mark int64) {
	db.counts.mu.Lock()
	defer db.counts.mu.Unlock()
	if c := db.counts.of[table]; !c.known || mark >= c.mark {
		if db.counts.of == nil {
			db.counts.of = map[string]rowCount{}
		}
		db.counts.of[table] = rowCount{known: true, mark: mark, count: count}
	}
}
