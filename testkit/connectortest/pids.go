package connectortest

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// PIDFile reads the test server's --pid-file (or --double-fork file): its
// pid namespace, then the pids it wrote as that namespace numbers them (a
// confined server has a pid namespace of its own where oa may make one,
// and is pid 1 there). It returns each as this process sees it — 0 for
// one no longer running (a namespace's processes are found only while
// they run) — and false until the file is whole. want is how many pids
// the file holds.
func PIDFile(file string, want int) ([]int, bool) {
	b, err := os.ReadFile(file)
	f := strings.Fields(string(b))
	if err != nil || len(f) != want+1 {
		return nil, false
	}
	out := make([]int, want)
	for i := range out {
		n, err := strconv.Atoi(f[i+1])
		if err != nil {
			return nil, false
		}
		out[i] = hostPID(f[0], n)
	}
	return out, true
}

// hostPID finds the process whose pid in namespace ns (a /proc/PID/ns/pid
// link, "pid:[…]") is pid: pid itself when ns is this process's, else the
// process of that namespace whose NSpid ends with pid. 0 when none is.
func hostPID(ns string, pid int) int {
	if own, _ := os.Readlink("/proc/self/ns/pid"); own == ns {
		return pid
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		host, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if link, _ := os.Readlink(filepath.Join("/proc", e.Name(), "ns", "pid")); link != ns {
			continue
		}
		status, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		for line := range bytes.SplitSeq(status, []byte("\n")) {
			if v, ok := bytes.CutPrefix(line, []byte("NSpid:")); ok {
				f := strings.Fields(string(v))
				if len(f) > 0 && f[len(f)-1] == strconv.Itoa(pid) {
					return host
				}
			}
		}
	}
	return 0
}
