package coordinator

import (
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/oa-dev/oa/ledger"
)

// owner identifies the process executing a run (ledger.RunOwner): its
// pid and the kernel's start time of that pid, so a reused pid is not
// mistaken for the owner.
type owner = ledger.RunOwner

// self is this process as a run's owner.
func self() owner { return owner{PID: os.Getpid(), Start: startTime(os.Getpid())} }

// alive reports whether the owner process still runs.
func alive(o owner) bool {
	if o.PID <= 0 {
		return false
	}
	if err := syscall.Kill(o.PID, 0); err != nil && err != syscall.EPERM {
		return false
	}
	return startTime(o.PID) == o.Start
}

// startTime reads field 22 of /proc/PID/stat ("" when unknown).
func startTime(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// The command name (field 2) may hold spaces; fields after it follow
	// its closing parenthesis.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 20 {
		return ""
	}
	if strings.TrimSpace(fields[0]) == "Z" {
		return "" // a zombie has ended
	}
	return fields[19]
}
