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

// OwnedTrees is the typed store of the owned process trees: shared
// plumbing, written by connector (through its OwnedTrees interface, which
// *OwnedTrees satisfies) for whichever stage starts servers, and read by
// whoever reaps orphans.
//
// Every row carries a MAC made with the store's key (the host's
// coordinator secret), so a row written by anyone else — one that names an
// unrelated process for the next coordinator to kill — reads as not
// Authentic, and is never acted on.
type OwnedTrees struct {
	db  *DB
	key []byte
}

// OwnedTrees returns the database's owned process trees, whose rows are
// authenticated with key.
func (db *DB) OwnedTrees(key []byte) *OwnedTrees { return &OwnedTrees{db, key} }

// ownedMACDomain separates the MACs of owned-tree rows from every other
// use of the key.
const ownedMACDomain = "oa.owned-process/v1\n"

// mac is the row's MAC with key over every field but Authentic.
func (r OwnedProcess) mac(key []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(ownedMACDomain))
	for _, f := range []string{r.Tree, strconv.Itoa(r.OwnerPID), r.OwnerStart, strconv.Itoa(r.PID), r.PIDStart, r.Cgroup, strconv.Itoa(r.PGID)} {
		m.Write([]byte(strconv.Itoa(len(f)) + ":" + f + "\x00"))
	}
	return "hmac-sha256:" + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// OwnedProcess is one row of the owned process trees: a process
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
	// store's key; it is not stored.
	Authentic bool
}

// RecordOwned adds rows to the owned trees in one write; a row already there
// (same tree and pid) is kept as it is.
func (o *OwnedTrees) RecordOwned(ctx context.Context, rows ...OwnedProcess) error {
	if len(o.key) == 0 {
		return errors.New("store: record owned process: no key to authenticate rows with")
	}
	for _, r := range rows {
		if r.Tree == "" || r.OwnerPID <= 0 || r.OwnerStart == "" || r.PID < 0 || (r.PID == 0) != (r.PIDStart == "") || r.PGID < 0 {
			return errors.New("store: record owned process: incomplete row")
		}
	}
	tx, err := o.db.BeginWrite(ctx)
	if err != nil {
		return fmt.Errorf("store: record owned process: %w", err)
	}
	defer tx.Rollback()
	for _, r := range rows {
		_, err := tx.ExecContext(ctx, `
INSERT INTO owned_processes (tree, owner_pid, owner_start, pid, pid_start, cgroup, pgid, mac)
VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tree, pid) DO NOTHING`,
			r.Tree, r.OwnerPID, r.OwnerStart, r.PID, r.PIDStart, r.Cgroup, r.PGID, r.mac(o.key))
		if err != nil {
			return fmt.Errorf("store: record owned process: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: record owned process: %w", err)
	}
	return nil
}

// OwnedProcesses returns every row of the owned trees, ordered by tree
// and pid, each marked Authentic when its MAC verifies with the store's
// key.
func (o *OwnedTrees) OwnedProcesses(ctx context.Context) ([]OwnedProcess, error) {
	rows, err := o.db.db.QueryContext(ctx, `
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
		r.Authentic = len(o.key) > 0 && hmac.Equal([]byte(mac), []byte(r.mac(o.key)))
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: read owned processes: %w", err)
	}
	return out, nil
}

// ForgetOwned removes every row of a tree: it was verified ended.
func (o *OwnedTrees) ForgetOwned(ctx context.Context, tree string) error {
	if _, err := o.db.ExecContext(ctx, `DELETE FROM owned_processes WHERE tree = ?`, tree); err != nil {
		return fmt.Errorf("store: forget owned tree: %w", err)
	}
	return nil
}
