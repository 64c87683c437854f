// Package store keeps a host's durable state in one SQLite database file,
// normally under $OA_HOME.
//
// The store holds signed records as the exact bytes it was given. It neither
// signs nor verifies them: that is the job of the host package and of the
// stage that reads them, which check the signature of every record. A row
// edited behind the store's back is returned as it is stored, so the edit
// shows up as a record whose signature does not verify.
//
// # Tables and their owners
//
// The schema of every table is one of the numbered migrations below, so a
// database written by any earlier oa opens unchanged. A table that one
// stage owns is read and written only by that stage's typed store, built
// on this package's handle ([DB.Write], [DB.QueryContext],
// [DB.ExecContext]); what several stages share has its typed API here.
//
// admission_sequences, admissions and revocations are admit's.
// admission_sequences has one row per package name holding the last
// sequence number handed out for it; the counter only ever grows, so a
// sequence number is never reused, even if admission rows were removed by
// hand. admissions holds one row per admission record: package name,
// sequence number (1, 2, 3… per package), artifact digest, record and
// signature bytes; (package, seq) is the primary key. revocations holds one
// row per revocation record with a store-assigned sequence number
// (increasing across all revocations, never reused); a digest may have
// several.
//
// versions is shared ([Versions]): versioned host records of other kinds
// (connections, the capability registry's signatures, bindings, pins,
// checkpoints, fleet records): one row per (kind, key, seq), seq counting
// 1, 2, 3… per (kind, key). The latest seq is the current version; earlier
// ones are history.
//
// runs, attention, receipts and used_states are the coordinator's: a run's
// and an attention item's state is one JSON document rewritten as the run
// moves (never holding an input value); receipts are append-only and
// chained; used_states remembers single-use request states until they
// expire.
//
// log_leaves, log_hashes and log_checkpoints are the ledger's (through
// ledger/translog): the host's transparency log of receipts, append-only,
// and log_cosignatures its witnesses' cosignatures of its checkpoints;
// witness_logs is a witness's state (ledger/translog's witness).
//
// owned_processes is shared plumbing ([OwnedTrees]): the record of the
// process trees (downstream servers and everything they started) a
// process started and owns, written by connector: rows are written before or right after a
// start and removed once the tree is verified ended, so what is left names
// trees whose owner died without ending them. It is mutable state, not
// history.
//
// The other record tables are append-only. No typed store has an API to
// update or delete a row of them, and triggers in the schema refuse UPDATE and DELETE, so a
// mistake in other code cannot rewrite history. The triggers are not a
// security boundary: anyone who can write the file can drop them. Signatures
// are.
//
// The schema version is kept in PRAGMA user_version. Open applies missing
// migrations in one write transaction and refuses a database whose version is
// newer than this code knows ([ErrSchemaTooNew]).
//
// # Concurrency
//
// A [DB] is safe for concurrent use by multiple goroutines, and several DBs,
// in one process or in several, may use the same file at once. The database
// runs in WAL mode, so readers do not block the writer or each other, and a
// read sees only committed transactions. Writes take the write lock up front
// (BEGIN IMMEDIATE) and so are serialized. Within a process they queue in Go
// for the process's one writing connection (so a thousand concurrent writers
// of one process are one contender for SQLite's lock, not a thousand);
// between processes, a writer that finds the lock taken waits: SQLite's
// busy handler for up to [BusyTimeout], then the whole begin again, for as
// long as its context lasts. A busy database is a wait, never a failure a
// caller could mistake for a result. Once begun, a write transaction is not
// refused for a lock (in WAL mode nothing after BEGIN IMMEDIATE waits on
// another connection). Each write is atomic: entirely written or not at all.
//
// WAL mode needs shared memory between the processes, so the file must be on
// a local file system, not a network one.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/oa-dev/oa/internal/coalesce"
	"modernc.org/sqlite" // also registers the "sqlite" database/sql driver
	sqlite3 "modernc.org/sqlite/lib"
)

// BusyTimeout is how long SQLite's own busy handler waits for a lock held
// by another connection or process: a read, and each attempt to begin a
// write ([DB.BeginWrite] then begins again while its context lasts).
const BusyTimeout = 10 * time.Second

// busyHandlerWait is BusyTimeout, shortened by tests that need a lock
// held for longer than one wait.
var busyHandlerWait = BusyTimeout

// ErrSchemaTooNew is returned (wrapped) by [Open] when the database was
// written by a newer version of this code than the one running.
var ErrSchemaTooNew = errors.New("store: database schema is newer than this program supports")

// migrations are applied in order; after migrations[i] the schema version is
// i+1. Never edit an existing migration: append a new one.
var migrations = []string{
	// 1: admissions and revocations.
	`
CREATE TABLE admission_sequences (
	package  TEXT    NOT NULL PRIMARY KEY,
	last_seq INTEGER NOT NULL CHECK (last_seq > 0)
) STRICT;

CREATE TRIGGER admission_sequences_only_grow
BEFORE UPDATE ON admission_sequences
WHEN NEW.package IS NOT OLD.package OR NEW.last_seq <= OLD.last_seq
BEGIN SELECT RAISE(ABORT, 'admission sequence numbers only grow'); END;

CREATE TRIGGER admission_sequences_no_delete
BEFORE DELETE ON admission_sequences
BEGIN SELECT RAISE(ABORT, 'admission sequence numbers are permanent'); END;

CREATE TABLE admissions (
	package         TEXT    NOT NULL REFERENCES admission_sequences (package),
	seq             INTEGER NOT NULL CHECK (seq > 0),
	artifact_digest TEXT    NOT NULL CHECK (artifact_digest <> ''),
	record          BLOB    NOT NULL,
	signature       BLOB    NOT NULL,
	PRIMARY KEY (package, seq)
) STRICT;

CREATE INDEX admissions_by_artifact ON admissions (artifact_digest);

CREATE TRIGGER admissions_no_update
BEFORE UPDATE ON admissions
BEGIN SELECT RAISE(ABORT, 'admissions are append-only'); END;

CREATE TRIGGER admissions_no_delete
BEFORE DELETE ON admissions
BEGIN SELECT RAISE(ABORT, 'admissions are append-only'); END;

CREATE TABLE revocations (
	seq             INTEGER PRIMARY KEY AUTOINCREMENT,
	artifact_digest TEXT    NOT NULL CHECK (artifact_digest <> ''),
	record          BLOB    NOT NULL,
	signature       BLOB    NOT NULL
) STRICT;

CREATE INDEX revocations_by_artifact ON revocations (artifact_digest);

CREATE TRIGGER revocations_no_update
BEFORE UPDATE ON revocations
BEGIN SELECT RAISE(ABORT, 'revocations are permanent'); END;

CREATE TRIGGER revocations_no_delete
BEFORE DELETE ON revocations
BEGIN SELECT RAISE(ABORT, 'revocations are permanent'); END;
`,
	// 2: versioned records (connections, registry signatures, bindings).
	`
CREATE TABLE versions (
	kind      TEXT    NOT NULL CHECK (kind <> ''),
	key       TEXT    NOT NULL CHECK (key <> ''),
	seq       INTEGER NOT NULL CHECK (seq > 0),
	record    BLOB    NOT NULL,
	signature BLOB    NOT NULL,
	PRIMARY KEY (kind, key, seq)
) STRICT;

CREATE TRIGGER versions_no_update
BEFORE UPDATE ON versions
BEGIN SELECT RAISE(ABORT, 'versions are append-only'); END;

CREATE TRIGGER versions_no_delete
BEFORE DELETE ON versions
BEGIN SELECT RAISE(ABORT, 'versions are append-only'); END;
`,
	// 3: the coordinator's runs, attention items, receipts and used
	// request states.
	`
CREATE TABLE runs (
	run_id     TEXT    NOT NULL PRIMARY KEY,
	deployment TEXT    NOT NULL,
	request_id TEXT    NOT NULL,
	state      BLOB    NOT NULL,
	UNIQUE (deployment, request_id)
) STRICT;

CREATE TABLE attention (
	id     TEXT NOT NULL PRIMARY KEY,
	run_id TEXT NOT NULL REFERENCES runs (run_id),
	state  BLOB NOT NULL
) STRICT;

CREATE INDEX attention_by_run ON attention (run_id);

CREATE TABLE receipts (
	seq         INTEGER NOT NULL PRIMARY KEY CHECK (seq > 0),
	run_id      TEXT    NOT NULL,
	attempt     INTEGER NOT NULL CHECK (attempt > 0),
	prev_digest TEXT    NOT NULL,
	record      BLOB    NOT NULL,
	signature   BLOB    NOT NULL,
	UNIQUE (run_id, attempt)
) STRICT;

CREATE TRIGGER receipts_no_update
BEFORE UPDATE ON receipts
BEGIN SELECT RAISE(ABORT, 'receipts are append-only'); END;

CREATE TRIGGER receipts_no_delete
BEFORE DELETE ON receipts
BEGIN SELECT RAISE(ABORT, 'receipts are append-only'); END;

CREATE TABLE used_states (
	nonce      TEXT NOT NULL PRIMARY KEY,
	expires_at TEXT NOT NULL
) STRICT;
`,
	// 4: the process trees a process started and owns (see owned.go).
	`
CREATE TABLE owned_processes (
	tree        TEXT    NOT NULL CHECK (tree <> ''),
	owner_pid   INTEGER NOT NULL CHECK (owner_pid > 0),
	owner_start TEXT    NOT NULL CHECK (owner_start <> ''),
	pid         INTEGER NOT NULL CHECK (pid >= 0),
	pid_start   TEXT    NOT NULL,
	cgroup      TEXT    NOT NULL,
	CHECK ((pid = 0) = (pid_start = '')),
	PRIMARY KEY (tree, pid)
) STRICT;
`,
	// 5: store integrity. Each receipt row names its run's request, so a
	// new request whose run row was removed finds the receipt the chain
	// still holds (the coordinator refuses it, never runs it again);
	// rows sealed before carry NULL. Each owned-process row carries the
	// process group its server was given and the host MAC (rows written
	// before carry '' and are never acted on).
	`
ALTER TABLE receipts ADD COLUMN deployment TEXT;
ALTER TABLE receipts ADD COLUMN request_id TEXT;
CREATE INDEX receipts_by_request ON receipts (deployment, request_id);
ALTER TABLE owned_processes ADD COLUMN pgid INTEGER NOT NULL DEFAULT 0 CHECK (pgid >= 0);
ALTER TABLE owned_processes ADD COLUMN mac TEXT NOT NULL DEFAULT '';
`,
	// 6: no change. The number was held for work that in the end needed
	// no schema change; it stays, empty, because databases at version 7
	// exist and versions are positions in this list.
	`-- 6: no change`,
	// 7: history rows may be packed (see pack.go): run states and
	// checkpoint records written from this version on are deflated
	// against a fixed dictionary. Nothing in the tables changes
	// (rows stored before stay as they are and are read as they are); the
	// version is raised so that a program from before refuses the
	// database (ErrSchemaTooNew) instead of reading packed rows as edited
	// ones.
	`-- 7: packed history rows`,
	// 8: the open attention items indexed by the state their document
	// names, so that the open ones (needs_attention, `oa attention list`)
	// are read without reading every item the host ever stored: with
	// 100,000 decided items, 0.95 s and 131 MB a listing before.
	`
CREATE INDEX attention_open ON attention (id) WHERE ` + OpenAttention + `;
`,
	// 9: the host's transparency log of receipts (ledger/translog, issue
	// 41): its leaves (entry idx is receipt idx+1's digest), the RFC 6962
	// tree's stored hashes by golang.org/x/mod/sumdb/tlog's stored hash
	// index, and the signed checkpoint of every size; all append-only.
	// witness_logs is `oa witness serve`'s state: the last checkpoint it
	// cosigned of each log, replaced only by a consistent larger one.
	`
CREATE TABLE log_leaves (
	idx   INTEGER NOT NULL PRIMARY KEY CHECK (idx >= 0),
	entry BLOB    NOT NULL UNIQUE
) STRICT;

CREATE TABLE log_hashes (
	idx  INTEGER NOT NULL PRIMARY KEY CHECK (idx >= 0),
	hash BLOB    NOT NULL CHECK (length(hash) = 32)
) STRICT;

CREATE TABLE log_checkpoints (
	size INTEGER NOT NULL PRIMARY KEY CHECK (size > 0),
	root BLOB    NOT NULL CHECK (length(root) = 32),
	note BLOB    NOT NULL
) STRICT;

CREATE TRIGGER log_leaves_no_update BEFORE UPDATE ON log_leaves
BEGIN SELECT RAISE(ABORT, 'the log is append-only'); END;
CREATE TRIGGER log_leaves_no_delete BEFORE DELETE ON log_leaves
BEGIN SELECT RAISE(ABORT, 'the log is append-only'); END;
CREATE TRIGGER log_hashes_no_update BEFORE UPDATE ON log_hashes
BEGIN SELECT RAISE(ABORT, 'the log is append-only'); END;
CREATE TRIGGER log_hashes_no_delete BEFORE DELETE ON log_hashes
BEGIN SELECT RAISE(ABORT, 'the log is append-only'); END;
CREATE TRIGGER log_checkpoints_no_update BEFORE UPDATE ON log_checkpoints
BEGIN SELECT RAISE(ABORT, 'the log is append-only'); END;
CREATE TRIGGER log_checkpoints_no_delete BEFORE DELETE ON log_checkpoints
BEGIN SELECT RAISE(ABORT, 'the log is append-only'); END;

CREATE TABLE witness_logs (
	origin TEXT    NOT NULL PRIMARY KEY CHECK (origin <> ''),
	vkey   TEXT    NOT NULL CHECK (vkey <> ''),
	size   INTEGER NOT NULL CHECK (size >= 0),
	root   BLOB    NOT NULL,
	note   BLOB    NOT NULL
) STRICT;

CREATE TRIGGER witness_logs_only_grow
BEFORE UPDATE ON witness_logs
WHEN NEW.origin IS NOT OLD.origin OR NEW.size < OLD.size
BEGIN SELECT RAISE(ABORT, 'a witnessed log only grows'); END;
`,
	// 10: the cosignatures the host's witnesses returned for its log's
	// checkpoints (issue 41): by checkpoint size and the witness's
	// public key, the c2sp.org/tlog-cosignature lines as the witness
	// answered them (checked before they are stored); append-only.
	`
CREATE TABLE log_cosignatures (
	size    INTEGER NOT NULL CHECK (size > 0),
	witness TEXT    NOT NULL CHECK (witness <> ''),
	sigs    BLOB    NOT NULL,
	PRIMARY KEY (size, witness)
) STRICT;

CREATE TRIGGER log_cosignatures_no_update BEFORE UPDATE ON log_cosignatures
BEGIN SELECT RAISE(ABORT, 'the log is append-only'); END;
CREATE TRIGGER log_cosignatures_no_delete BEFORE DELETE ON log_cosignatures
BEGIN SELECT RAISE(ABORT, 'the log is append-only'); END;
`,
}

// OpenAttention is the condition an attention item's row meets while its
// document says it is open ({"state":"open"}): the condition of the
// attention_open index, which a query names to use it.
const OpenAttention = `json_extract(CAST(state AS TEXT), '$.state') = 'open'`

// schemaVersion is the schema version this code writes and understands.
var schemaVersion = len(migrations)

// DB is a handle on a host state database. Create one with [Open].
type DB struct {
	// db is the pool reads go through: in WAL mode they run side by side
	// and never wait for the writer.
	db *sql.DB
	// w holds this process's one writing connection (see Write): writers
	// of one process queue for it in Go, so only one connection per
	// process ever asks SQLite for the write lock.
	w    *sql.DB
	path string
	// counts are the append-only tables' sizes as last counted
	// (CountRows).
	counts rowCounts
	// stamps joins the stamp reads of runs checking their plans at once
	// (SignedStamp).
	stamps coalesce.Read[Stamp]
	// writes runs the writes waiting for the next group commit
	// (commitBatch), at most maxBatch at once.
	writes coalesce.Batches[*queuedWrite]
}

// Open opens the database at path, creating it if needed, and brings its
// schema up to date.
//
// A new file is created with mode 0600, and a missing parent directory with
// mode 0700; existing ones are left as they are. Open returns an error
// wrapping [ErrSchemaTooNew] if the database has a newer schema than this
// code knows.
func Open(ctx context.Context, path string) (*DB, error) {
	if path == "" {
		return nil, errors.New("store: empty database path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	// Create the file ourselves so that it gets mode 0600 whatever the umask;
	// SQLite gives its -wal and -shm files the same mode. O_EXCL matters: never
	// open and close an existing database file here, since closing any
	// descriptor of a file drops the POSIX locks this process holds on it.
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case err == nil:
		if err := f.Close(); err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
	case !errors.Is(err, fs.ErrExist):
		return nil, fmt.Errorf("store: %w", err)
	}

	q := url.Values{}
	q.Set("_txlock", "immediate")
	q.Add("_pragma", "busy_timeout("+strconv.FormatInt(busyHandlerWait.Milliseconds(), 10)+")")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(FULL)")
	dsn := (&url.URL{Scheme: "file", OmitHost: true, Path: abs, RawQuery: q.Encode()}).String()

	// Each connection keeps the statements it runs prepared (prepared.go).
	sdb, wdb := openPrepared(dsn), openPrepared(dsn)
	wdb.SetMaxOpenConns(1)
	wdb.SetMaxIdleConns(1)
	keepReaders(sdb)
	db := &DB{db: sdb, w: wdb, path: abs}
	db.stamps.Fn = db.readStamp
	db.writes.Run, db.writes.Max = db.commitBatch, maxBatch
	if err := db.useWAL(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if err := db.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// Reader connections are kept rather than closed after each burst:
// database/sql keeps two idle by default, so runs reading at once opened
// a connection each and closed it after — a file open, the schema read
// and every statement prepared again (a seventh of a coordinator's CPU at
// 32 runs in flight). Up to idleReaders stay open, each closed after
// readerIdleTime unused, so a burst's connections do not outlive it.
const (
	idleReaders    = 16
	readerIdleTime = time.Minute
)

func keepReaders(db *sql.DB) {
	db.SetMaxIdleConns(idleReaders)
	db.SetConnMaxIdleTime(readerIdleTime)
}

// useWAL puts the database in WAL mode, which is then recorded in the file
// and holds for every later connection.
//
// Switching a file from rollback-journal mode to WAL upgrades a read lock to
// a write lock, and SQLite answers SQLITE_BUSY at once, without waiting, when
// another connection is doing the same (as when several processes open a new
// database together). So useWAL retries for up to BusyTimeout itself. Once
// the file is in WAL mode the pragma takes no lock and returns at once.
func (db *DB) useWAL(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, BusyTimeout)
	defer cancel()
	delay := time.Millisecond
	for {
		var mode string
		err := db.db.QueryRowContext(ctx, "PRAGMA journal_mode = WAL").Scan(&mode)
		if err == nil {
			if mode != "wal" {
				return fmt.Errorf("store: open %s: cannot use WAL mode (journal mode is %q)", db.path, mode)
			}
			return nil
		}
		if !isBusy(err) {
			return fmt.Errorf("store: open %s: %w", db.path, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("store: open %s: %w", db.path, err)
		case <-time.After(delay):
		}
		delay = min(2*delay, 50*time.Millisecond)
	}
}

// isBusy reports whether err is SQLite's SQLITE_BUSY or SQLITE_LOCKED.
func isBusy(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	code := se.Code() & 0xff
	return code == sqlite3.SQLITE_BUSY || code == sqlite3.SQLITE_LOCKED
}

// migrate applies the migrations the database lacks, all in one transaction.
func (db *DB) migrate(ctx context.Context) error {
	tx, err := db.w.BeginTx(ctx, nil) // BEGIN IMMEDIATE
	if err != nil {
		return fmt.Errorf("store: open %s: %w", db.path, err)
	}
	defer tx.Rollback()
	var version int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return fmt.Errorf("store: open %s: %w", db.path, err)
	}
	if version > schemaVersion {
		return fmt.Errorf("%w: %s has schema version %d, this program knows versions up to %d; use a newer oa",
			ErrSchemaTooNew, db.path, version, schemaVersion)
	}
	if version < 0 {
		return fmt.Errorf("store: %s has invalid schema version %d", db.path, version)
	}
	if version == schemaVersion {
		return nil
	}
	for i := version; i < schemaVersion; i++ {
		if _, err := tx.ExecContext(ctx, migrations[i]); err != nil {
			return fmt.Errorf("store: migrate %s to schema version %d: %w", db.path, i+1, err)
		}
	}
	if _, err := tx.ExecContext(ctx, "PRAGMA user_version = "+strconv.Itoa(schemaVersion)); err != nil {
		return fmt.Errorf("store: migrate %s: %w", db.path, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: migrate %s: %w", db.path, err)
	}
	return nil
}

// Close closes the database.
func (db *DB) Close() error {
	return errors.Join(db.db.Close(), db.w.Close())
}
