package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/oa-dev/oa/internal/store"
)

// ReapOrphans ends the owned process trees whose owner is dead
// (its pid no longer runs with its recorded start time): what a process
// killed with SIGKILL, or one that crashed, left running. Every recorded
// process still running with its recorded start time is a member — a pid
// since given to another process is never touched — as is every live
// descendant of one, and a recorded cgroup is killed whole. A tree
// verified ended is forgotten; one that would not end stays recorded and
// is reported in the error. It returns how many trees were ended. Trees of
// a live owner (this process included) are left alone.
func ReapOrphans(ctx context.Context, owned OwnedTrees) (int, error) {
	rows, err := owned.OwnedProcesses(ctx)
	if err != nil {
		return 0, err
	}
	trees := map[string][]store.OwnedProcess{}
	var order []string
	forged := 0
	for _, r := range rows {
		if !r.Authentic {
			// Not written by a coordinator of this host (or from before
			// rows carried the MAC): never acted on.
			forged++
			continue
		}
		if _, seen := trees[r.Tree]; !seen {
			order = append(order, r.Tree)
		}
		trees[r.Tree] = append(trees[r.Tree], r)
	}
	reaped := 0
	var errs []error
	if forged > 0 {
		errs = append(errs, fmt.Errorf("connector: %d row(s) of the owned process trees do not carry this host's MAC; the processes they name were left alone", forged))
	}
	for _, id := range order {
		rs := trees[id]
		if (procID{rs[0].OwnerPID, rs[0].OwnerStart}).running() {
			continue
		}
		if err := reapTree(id, rs, owned); err != nil {
			errs = append(errs, err)
			continue
		}
		reaped++
	}
	return reaped, errors.Join(errs...)
}

// reapTree ends one orphaned tree and forgets it.
func reapTree(id string, rows []store.OwnedProcess, owned OwnedTrees) error {
	t := &tree{id: id, owned: owned, members: map[int]string{}, stop: make(chan struct{}), stopped: true}
	for _, r := range rows {
		if r.PID > 0 && (procID{r.PID, r.PIDStart}).running() && provenMember(r) {
			t.members[r.PID] = r.PIDStart
		}
	}
	cgroup := rows[0].Cgroup
	// Only a folder named as newTree names them is ever killed, whatever
	// a row edited by hand says.
	if cgroup != "" && (!filepath.IsAbs(cgroup) || filepath.Clean(cgroup) != cgroup || filepath.Base(cgroup) != "oa-"+id) {
		return fmt.Errorf("connector: orphaned tree %s names a cgroup oa did not make", id)
	}
	if cgroup != "" {
		if _, err := os.Stat(cgroup); errors.Is(err, fs.ErrNotExist) {
			cgroup = "" // gone (a reboot, or removed by hand): the processes are all there is
		}
	}
	// The recorded processes first (their descendants found by the walk),
	// then the cgroup, which holds any they missed.
	t.kill()
	if !t.waitEnded(verifyWithin) {
		return fmt.Errorf("connector: the processes of orphaned tree %s are still running after SIGKILL", id)
	}
	t.cgroup = cgroup
	if cgroup != "" {
		t.kill()
		if !t.waitEnded(verifyWithin) {
			return fmt.Errorf("connector: the cgroup of orphaned tree %s still holds running processes after cgroup.kill", id)
		}
	}
	return t.release()
}

// provenMember reports whether the process an owned-tree row names is still
// in what its owner gave the tree: the tree's cgroup, or (a tree owned as
// a set of processes) the process group of its server. A pid and start
// time alone are never enough to signal a process.
func provenMember(r store.OwnedProcess) bool {
	if r.Cgroup != "" {
		return inCgroup(r.PID, r.Cgroup)
	}
	p, ok := readProc(r.PID)
	if ok && r.PGID > 0 && p.pgrp == r.PGID {
		return true
	}
	return carriesMark(r.PID, r.Tree)
}

// TreeEnv is the environment variable every server is started with,
// naming its tree; what the server starts inherits it.
const TreeEnv = "OA_PROCESS_TREE"

// maxEnviron bounds the read of a process's environment.
const maxEnviron = 1 << 20

// carriesMark reports whether process pid was started with the mark of
// tree in its environment (/proc/PID/environ, readable for this user's
// own processes only).
func carriesMark(pid int, tree string) bool {
	f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
	if err != nil {
		return false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxEnviron))
	if err != nil {
		return false
	}
	mark := TreeEnv + "=" + tree
	for kv := range bytes.SplitSeq(b, []byte{0}) {
		if string(kv) == mark {
			return true
		}
	}
	return false
}
