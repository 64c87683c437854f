package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"sync"
)

// The sqlite driver prepares every statement a query or an exec outside
// sql.Stmt runs, and throws it away after: SQLite parses and plans the
// same SQL again each time (about a millisecond of CPU a run over the
// dozen statements a run's writes and checks make). A store's connections
// keep the statements they ran prepared instead, per connection, and run
// them again with new arguments: the driver's own prepared-statement path
// (driver.Stmt), reset by SQLite between uses. A statement whose rows are
// still open when the same SQL comes again (a query inside the loop over
// its own rows) runs prepared afresh, as before; so does SQL past the
// cache's bound.

// maxPrepared bounds the statements a connection keeps prepared: the store
// runs a few dozen distinct SQL texts, all constants.
const maxPrepared = 128

// sqliteDriver is the driver the sqlite package registers.
var sqliteDriver = func() driver.Driver {
	db, _ := sql.Open("sqlite", "")
	defer db.Close()
	return db.Driver()
}()

// openPrepared opens dsn like sql.Open("sqlite", dsn), its connections
// keeping their statements prepared.
func openPrepared(dsn string) *sql.DB {
	return sql.OpenDB(preparingConnector{dsn: dsn})
}

type preparingConnector struct{ dsn string }

func (p preparingConnector) Connect(context.Context) (driver.Conn, error) {
	c, err := sqliteDriver.Open(p.dsn)
	if err != nil {
		return nil, err
	}
	sc, ok := c.(sqliteConn)
	if !ok {
		return c, nil // not the driver this was written for: as it is
	}
	return &preparingConn{sqliteConn: sc, stmts: map[string]*preparedStmt{}}, nil
}

func (preparingConnector) Driver() driver.Driver { return sqliteDriver }

// sqliteConn is what the sqlite driver's connection offers database/sql;
// preparingConn passes all of it on.
type sqliteConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.SessionResetter
	driver.Validator
	driver.Pinger
}

// preparedStmt is a statement a connection keeps, busy while it runs or
// its rows are open.
type preparedStmt struct {
	stmt interface {
		driver.Stmt
		driver.StmtExecContext
		driver.StmtQueryContext
	}
	busy bool
}

type preparingConn struct {
	sqliteConn
	mu    sync.Mutex
	stmts map[string]*preparedStmt
}

// take returns query's statement, prepared now if it is new, marked busy;
// nil when it is busy, cannot be kept or does not prepare (the caller then
// runs query unprepared, which reports the error).
func (c *preparingConn) take(ctx context.Context, query string) *preparedStmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.stmts[query]; s != nil {
		if s.busy {
			return nil
		}
		s.busy = true
		return s
	}
	if len(c.stmts) >= maxPrepared {
		return nil
	}
	ds, err := c.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	stmt, ok := ds.(interface {
		driver.Stmt
		driver.StmtExecContext
		driver.StmtQueryContext
	})
	if !ok {
		ds.Close()
		return nil
	}
	s := &preparedStmt{stmt: stmt, busy: true}
	c.stmts[query] = s
	return s
}

// release marks s free again.
func (c *preparingConn) release(s *preparedStmt) {
	c.mu.Lock()
	s.busy = false
	c.mu.Unlock()
}

func (c *preparingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	s := c.take(ctx, query)
	if s == nil {
		return c.sqliteConn.ExecContext(ctx, query, args)
	}
	defer c.release(s)
	return s.stmt.ExecContext(ctx, args)
}

func (c *preparingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	s := c.take(ctx, query)
	if s == nil {
		return c.sqliteConn.QueryContext(ctx, query, args)
	}
	rows, err := s.stmt.QueryContext(ctx, args)
	if err != nil {
		c.release(s)
		return nil, err
	}
	return &preparedRows{Rows: rows, done: func() { c.release(s) }}, nil
}

// Close finalizes the statements kept, then closes the connection.
func (c *preparingConn) Close() error {
	c.mu.Lock()
	for q, s := range c.stmts {
		s.stmt.Close()
		delete(c.stmts, q)
	}
	c.mu.Unlock()
	return c.sqliteConn.Close()
}

// preparedRows frees its statement when closed.
type preparedRows struct {
	driver.Rows
	once sync.Once
	done func()
}

func (r *preparedRows) Close() error {
	err := r.Rows.Close()
	r.once.Do(r.done)
	return err
}
