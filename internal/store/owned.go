package store

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
)

// Ledger is the typed store of the owned-process ledger: shared
// plumbing, written by connector (through its Ledger interface, which
// *Ledger satisfies) for whichever stage starts servers, and read by
// whoever reaps orphans.
//
// Every row carries a MAC made with the ledger's key (the host's
// coordinator secret), so a row written by anyone else — one that names an
// unrelated process for the next coordinator to kill — reads as not
// Authentic, and is never acted on.
type Ledger struct {
	db  *DB
	key []byte
}

// Ledger returns the database's owned-process ledger, whose rows are
// authenticated with key.
func (db *DB) Ledger(key []byte) *Ledger { return &Ledger{db, key} }

// ledgerMACDomain separates ledger MACs from every other use of the key.
const ledgerMACDomain = "oa.owned-process/v1\n"

// mac is the row's MAC with key over every field but Authentic.
func (r OwnedProcess) mac(key []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(ledgerMACDomain))
	for _, f := range []string{r.Tree, strconv.Itoa(r.OwnerPID), r.OwnerStart, strconv.Itoa(r.PID), r.PIDStart, r.Cgroup, strconv.Itoa(r.PGID)} {
		m.Write([]byte(strconv.Itoa(len(f)) + ":" + f + "\x00"))
	}
	return "hmac-sha256:" + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// OwnedProcess is one row of the ledger of owned process trees: a process
// (the owner) started a tree — a downstream server and whatever it starts —
// and must end it. A tree is named by a row with PID 0 when it lives in a
// cgroup of its own (Cgroup is that folder), and by one row per process
// the owner has seen in it.
//
// Processes are named by pid and start time (the kernel's, from
// /proc/PID/stat, with the boot id), so a pid the kernel has handed to
// another process since is never taken for a member.
type OwnedProcess struct {
	// Tree is the id of the tree, unique per start.
	Tree string
	// OwnerPID and OwnerStart name the owner process.
	OwnerPID   int
	OwnerStart string
	// PID and PIDStart name one process of the tree; PID is 0 (and
	// PIDStart "") on the row naming the tree's cgroup.
	PID      int
	PIDStart string
	// Cgroup is the cgroup v2 folder holding the tree, "" when the tree
	// is owned as a set of processes only.
	Cgroup string
	// PGID is the process group the owner gave the tree's server (its
	// pid: the server is started as a group leader), 0 when unknown; with
	// no cgroup, a process is only taken for a member while it is in it.
	PGID int
	// Authentic is set on rows read back whose MAC verifies with the
	// ledger's key; it is not stored.
	Authentic bool
}

// RecordOwned adds rows to the ledger in one write; a row already there
// (same tree and pid) is kept as it is.
func (l *Ledger) RecordOwned(ctx context.Context, rows ...OwnedProcess) error {
	if len(l.key) == 0 {
		return errors.New("store: record owned process: the ledger has no key")
	}
	for _, r := range rows {
		if r.Tree == "" || r.OwnerPID <= 0 || r.OwnerStart == "" || r.PID < 0 || (r.PID == 0) != (r.PIDStart == "") || r.PGID < 0 {
			return errors.New("store: record owned process: incomplete row")
		}
	}
	tx, err := l.db.BeginWrite(ctx)
	if err != nil {
		return fmt.Errorf("store: record owned process: %w", err)
	}
	defer tx.Rollback()
	for _, r := range rows {
		_, err := tx.ExecContext(ctx, `
INSERT INTO owned_processes (tree, owner_pid, owner_start, pid, pid_start, cgroup, pgid, mac)
VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tree, pid) DO NOTHING`,
			r.Tree, r.OwnerPID, r.OwnerStart, r.PID, r.PIDStart, r.Cgroup, r.PGID, r.mac(l.key))
		if err != nil {
			return fmt.Errorf("store: record owned process: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: record owned process: %w", err)
	}
	return nil
}

// OwnedProcesses returns every row of the ledger, ordered by tree and
// pid, each marked Authentic when its MAC verifies with the ledger's key.
func (l *Ledger) OwnedProcesses(ctx context.Context) ([]OwnedProcess, error) {
	rows, err := l.db.db.QueryContext(ctx, `
SELECT tree, owner_pid, owner_start, pid, pid_start, cgroup, pgid, mac FROM owned_processes ORDER BY tree, pid`)
	if err != nil {
		return nil, fmt.Errorf("store: read owned processes: %w", err)
	}
	defer rows.Close()
	var out []OwnedProcess
	for rows.Next() {
		var r OwnedProcess
		var mac string
		if err := rows.Scan(&r.Tree, &r.OwnerPID, &r.OwnerStart, &r.PID, &r.PIDStart, &r.Cgroup, &r.PGID, &mac); err != nil {
			return nil, fmt.Errorf("store: read owned processes: %w", err)
		}
		r.Authentic = len(l.key) > 0 && hmac.Equal([]byte(mac), []byte(r.mac(l.key)))
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: read owned processes: %w", err)
	}
	return out, nil
}

// ForgetOwned removes every row of a tree: it was verified ended.
func (l *Ledger) ForgetOwned(ctx context.Context, tree string) error {
	if _, err := l.db.ExecContext(ctx, `DELETE FROM owned_processes WHERE tree = ?`, tree); err != nil {
		return fmt.Errorf("store: forget owned tree: %w", err)
	}
	return nil
}
