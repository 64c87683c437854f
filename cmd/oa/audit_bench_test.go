package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/oa-dev/oa/connector/sandbox"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// BenchmarkAuditHistory: a host with OA_BENCH_RUNS runs (default 1,000)
// of append_triage_note on the sandbox, each done with its receipt, then
// `oa audit export` and `oa audit verify` of its bundle, each its own
// process. It reports the database's growth per run (disk-B/run, the
// state database after a WAL checkpoint, less the bound host before any
// run), the bundle's size per run, and each command's peak resident
// memory (maxrss-MB, from the process's rusage). Run it at two sizes to
// see what grows with history:
//
//	OA_BENCH_RUNS=200 go test ./cmd/oa -run '^$' -bench BenchmarkAuditHistory -benchtime 1x
//	OA_BENCH_RUNS=2000 go test ./cmd/oa -run '^$' -bench BenchmarkAuditHistory -benchtime 1x
func BenchmarkAuditHistory(b *testing.B) {
	if _, err := os.Stat("/usr/bin/time"); err != nil {
		b.Skip("needs GNU time (/usr/bin/time) to read each command's peak memory")
	}
	n := 1000
	if v := os.Getenv("OA_BENCH_RUNS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n <= 0 {
			b.Fatalf("OA_BENCH_RUNS=%q", v)
		}
	}
	ctx := context.Background()
	oa := oaBinary(b)
	h := hosttest.New(b, nil)
	h.WriteRegistry(resolve.StarterRegistry(hosttest.Name))
	opened := h.Open()
	h.AddConnection(opened, "records", resolve.SandboxConnector, hosttest.Sandbox)
	h.Bind(opened, "claude-test")
	dbFile := filepath.Join(h.Home, host.StateFile)
	before := checkpointedSize(b, dbFile)
	c, err := coordinator.Open(ctx, coordinator.Options{Home: h.Home, Deployment: "clinic", EffectTimeout: 30 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	in := json.RawMessage(`{"record_ref":"AB-1234","urgency":"soon","summary":"Persistent cough, three days."}`)
	records := filepath.Join(sandbox.Dir(h.Home), "records.json")
	for i := range n {
		// A real record holds a handful of notes; the sandbox's AB-1234
		// would otherwise hold every run's note, and each run reads it
		// whole. Back to the seed every ten runs.
		if i%10 == 0 {
			if err := os.Remove(records); err != nil && !os.IsNotExist(err) {
				b.Fatal(err)
			}
		}
		res, err := c.Run(ctx, coordinator.RunRequest{Workflow: "append_triage_note", Inputs: in, RequestID: fmt.Sprintf("hist-%d", i), Wait: time.Minute})
		if err != nil {
			b.Fatalf("run %d: %v", i, err)
		}
		if res.ReceiptDigest == "" {
			b.Fatalf("run %d has no receipt digest: %+v", i, res)
		}
	}
	if err := c.Close(); err != nil {
		b.Fatal(err)
	}
	grown := checkpointedSize(b, dbFile) - before
	hostPub := filepath.Join(h.Home, host.HostPubFile)
	keys := b.TempDir()
	pub, auth := filepath.Join(keys, "publisher.pub"), filepath.Join(keys, "authority.pub")
	for file, data := range map[string][]byte{pub: h.PublisherPub, auth: h.AuthorityPub} {
		if err := os.WriteFile(file, data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	bundle := filepath.Join(b.TempDir(), "audit.tar")
	var exportRSS, verifyRSS int64
	rssFile := filepath.Join(b.TempDir(), "maxrss")
	for b.Loop() {
		export := timed(oa, rssFile, "audit", "export", "-o", bundle)
		export.Env = append(os.Environ(), "OA_HOME="+h.Home)
		runOne(b, export)
		exportRSS = max(exportRSS, readRSS(b, rssFile))
		runOne(b, timed(oa, rssFile, "audit", "verify", bundle, "--publisher-key", pub, "--authority-key", auth, "--host-key", hostPub))
		verifyRSS = max(verifyRSS, readRSS(b, rssFile))
	}
	st, err := os.Stat(bundle)
	if err != nil {
		b.Fatal(err)
	}
	reportRows(b, dbFile, n)
	b.ReportMetric(float64(grown)/float64(n), "disk-B/run")
	b.ReportMetric(float64(st.Size())/float64(n), "bundle-B/run")
	b.ReportMetric(float64(exportRSS)/1024, "export-maxrss-MB")
	b.ReportMetric(float64(verifyRSS)/1024, "verify-maxrss-MB")
}

// timed is oa with args run under GNU time, which writes the command's
// peak resident memory (KiB) to rssFile. (The rusage Go's exec reports
// for a child counts the test process's own memory, shared at the fork.)
func timed(oa, rssFile string, args ...string) *exec.Cmd {
	return exec.Command("/usr/bin/time", append([]string{"-f", "%M", "-o", rssFile, oa}, args...)...)
}

// readRSS reads what timed wrote.
func readRSS(b *testing.B, file string) int64 {
	raw, err := os.ReadFile(file)
	if err != nil {
		b.Fatal(err)
	}
	kb, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
	if err != nil {
		b.Fatalf("GNU time wrote %q", raw)
	}
	return kb
}

// checkpointedSize folds the WAL into the database file and returns the
// file's size: the bytes the host's state takes at rest.
func checkpointedSize(b *testing.B, file string) int64 {
	db, err := sql.Open("sqlite", file)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		b.Fatal(err)
	}
	st, err := os.Stat(file)
	if err != nil {
		b.Fatal(err)
	}
	return st.Size()
}

// reportRows reports what the rows of a run hold, per run: the run's
// state, its receipts' records and signatures, and the versioned records
// (checkpoints) written with them.
func reportRows(b *testing.B, file string, n int) {
	db, err := sql.Open("sqlite", file)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	for _, q := range []struct{ unit, query string }{
		{"run-state-B/run", `SELECT COALESCE(SUM(LENGTH(state) + LENGTH(run_id) + LENGTH(request_id) + LENGTH(deployment)), 0) FROM runs`},
		{"receipt-B/run", `SELECT COALESCE(SUM(LENGTH(record) + LENGTH(signature) + LENGTH(prev_digest) + LENGTH(run_id)), 0) FROM receipts`},
		{"versions-B/run", `SELECT COALESCE(SUM(LENGTH(record) + LENGTH(signature)), 0) FROM versions`},
		{"versions/run", `SELECT COUNT(*) FROM versions`},
	} {
		var v float64
		if err := db.QueryRow(q.query).Scan(&v); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(v/float64(n), q.unit)
	}
}
