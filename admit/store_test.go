package admit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/oa-dev/oa/internal/store"
	"github.com/oa-dev/oa/internal/store/storetest"
)

func openTest(t testing.TB, path string) admissions {
	t.Helper()
	db, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Error(err)
		}
	})
	return admissions{db}
}

// fixed returns a build function that ignores seq.
func fixed(record, signature []byte) func(int64) ([]byte, []byte, error) {
	return func(int64) ([]byte, []byte, error) { return record, signature, nil }
}

// numbered returns a build function whose record names the sequence number.
func numbered(pkg string) func(int64) ([]byte, []byte, error) {
	return func(seq int64) ([]byte, []byte, error) {
		return []byte(fmt.Sprintf(`{"package":%q,"seq":%d}`, pkg, seq)), []byte("sig-" + strconv.FormatInt(seq, 10)), nil
	}
}

func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "oa.db")
	db := openTest(t, path)

	// Bytes that are not valid UTF-8 and contain NULs must survive unchanged.
	rec := []byte("{\"a\":1}\x00\xff\xfe trailing ")
	sig := []byte{0, 1, 2, 0xff, 0x80, 0}
	seq, err := db.InsertAdmission(ctx, "acme/invoice", "sha256:aaa", fixed(rec, sig))
	if err != nil {
		t.Fatal(err)
	}
	if seq != 1 {
		t.Fatalf("first seq = %d, want 1", seq)
	}
	if _, err := db.InsertAdmission(ctx, "acme/other", "sha256:aaa", fixed([]byte("r2"), []byte("s2"))); err != nil {
		t.Fatal(err)
	}
	if _, err := db.InsertAdmission(ctx, "acme/invoice", "sha256:bbb", fixed([]byte("r3"), []byte("s3"))); err != nil {
		t.Fatal(err)
	}
	rrec := []byte("revoked\x00\xff")
	rsig := []byte{0xde, 0xad, 0, 0xbe, 0xef}
	if err := db.InsertRevocation(ctx, "sha256:aaa", rrec, rsig); err != nil {
		t.Fatal(err)
	}
	if err := db.InsertRevocation(ctx, "sha256:ccc", []byte("r"), []byte("s")); err != nil {
		t.Fatal(err)
	}
	if err := db.InsertRevocation(ctx, "sha256:aaa", []byte("again"), []byte("s")); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// Read back through a fresh handle: what was committed is on disk.
	db = openTest(t, path)
	got, err := db.Admissions(ctx, "acme/invoice")
	if err != nil {
		t.Fatal(err)
	}
	want := []AdmissionRow{
		{Seq: 1, Package: "acme/invoice", ArtifactDigest: "sha256:aaa", Record: rec, Signature: sig},
		{Seq: 2, Package: "acme/invoice", ArtifactDigest: "sha256:bbb", Record: []byte("r3"), Signature: []byte("s3")},
	}
	checkAdmissions(t, "Admissions(acme/invoice)", got, want)

	all, err := db.Admissions(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	checkAdmissions(t, `Admissions("")`, all, append(want[:2:2],
		AdmissionRow{Seq: 1, Package: "acme/other", ArtifactDigest: "sha256:aaa", Record: []byte("r2"), Signature: []byte("s2")}))

	latest, ok, err := db.LatestAdmission(ctx, "acme/invoice")
	if err != nil || !ok {
		t.Fatalf("LatestAdmission = %v, %v", ok, err)
	}
	checkAdmissions(t, "LatestAdmission", []AdmissionRow{latest}, want[1:])
	if _, ok, err := db.LatestAdmission(ctx, "nobody"); ok || err != nil {
		t.Fatalf("LatestAdmission(nobody) = %v, %v; want false, nil", ok, err)
	}

	of, err := db.AdmissionsOf(ctx, "sha256:aaa")
	if err != nil {
		t.Fatal(err)
	}
	checkAdmissions(t, "AdmissionsOf", of, []AdmissionRow{want[0], all[2]})
	if none, err := db.AdmissionsOf(ctx, "sha256:none"); err != nil || len(none) != 0 {
		t.Fatalf("AdmissionsOf(none) = %v, %v", none, err)
	}

	revs, err := db.Revocations(ctx, "sha256:aaa")
	if err != nil {
		t.Fatal(err)
	}
	if len(revs) != 2 ||
		!bytes.Equal(revs[0].Record, rrec) || !bytes.Equal(revs[0].Signature, rsig) ||
		string(revs[1].Record) != "again" || revs[0].ArtifactDigest != "sha256:aaa" ||
		revs[0].Seq >= revs[1].Seq {
		t.Fatalf("Revocations(aaa) = %+v", revs)
	}
	allRevs, err := db.Revocations(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(allRevs) != 3 || allRevs[1].ArtifactDigest != "sha256:ccc" {
		t.Fatalf(`Revocations("") = %+v`, allRevs)
	}
}

func checkAdmissions(t *testing.T, what string, got, want []AdmissionRow) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d admissions, want %d: %+v", what, len(got), len(want), got)
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Seq != w.Seq || g.Package != w.Package || g.ArtifactDigest != w.ArtifactDigest ||
			!bytes.Equal(g.Record, w.Record) || !bytes.Equal(g.Signature, w.Signature) {
			t.Errorf("%s[%d] = %+v, want %+v", what, i, g, w)
		}
	}
}

func TestSequencePerPackage(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, filepath.Join(t.TempDir(), "oa.db"))
	insert := func(pkg string) int64 {
		t.Helper()
		seq, err := db.InsertAdmission(ctx, pkg, "sha256:x", numbered(pkg))
		if err != nil {
			t.Fatal(err)
		}
		return seq
	}
	for _, step := range []struct {
		pkg  string
		want int64
	}{{"a", 1}, {"a", 2}, {"b", 1}, {"a", 3}, {"b", 2}, {"c", 1}} {
		if got := insert(step.pkg); got != step.want {
			t.Fatalf("insert %s: seq %d, want %d", step.pkg, got, step.want)
		}
	}
	as, err := db.Admissions(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range as {
		if a.Seq != int64(i+1) || string(a.Record) != fmt.Sprintf(`{"package":"a","seq":%d}`, i+1) {
			t.Errorf("admission %d = %+v", i, a)
		}
	}
}

func TestBuildErrorWritesNothing(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, filepath.Join(t.TempDir(), "oa.db"))
	if _, err := db.InsertAdmission(ctx, "p", "sha256:1", numbered("p")); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	var asked int64
	_, err := db.InsertAdmission(ctx, "p", "sha256:2", func(seq int64) ([]byte, []byte, error) {
		asked = seq
		return []byte("half"), nil, boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want wrapping boom", err)
	}
	if asked != 2 {
		t.Fatalf("build was offered seq %d, want 2", asked)
	}
	// A new package whose first build fails leaves no trace either.
	if _, err := db.InsertAdmission(ctx, "q", "sha256:3", func(int64) ([]byte, []byte, error) { return nil, nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want wrapping boom", err)
	}
	// An empty record or signature is refused and also writes nothing.
	if _, err := db.InsertAdmission(ctx, "p", "sha256:2", fixed(nil, []byte("s"))); err == nil {
		t.Fatal("empty record accepted")
	}
	if _, err := db.InsertAdmission(ctx, "p", "sha256:2", fixed([]byte("r"), nil)); err == nil {
		t.Fatal("empty signature accepted")
	}

	as, err := db.Admissions(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != 1 || as[0].Seq != 1 {
		t.Fatalf("admissions after failed builds = %+v", as)
	}
	if seq, err := db.InsertAdmission(ctx, "p", "sha256:2", numbered("p")); err != nil || seq != 2 {
		t.Fatalf("next insert = %d, %v; want 2", seq, err)
	}
	if seq, err := db.InsertAdmission(ctx, "q", "sha256:3", numbered("q")); err != nil || seq != 1 {
		t.Fatalf("first q insert = %d, %v; want 1", seq, err)
	}
}

func TestInvalidInput(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, filepath.Join(t.TempDir(), "oa.db"))
	if _, err := db.InsertAdmission(ctx, "", "sha256:x", numbered("")); err == nil {
		t.Error("empty package accepted")
	}
	if _, err := db.InsertAdmission(ctx, "p", "", numbered("p")); err == nil {
		t.Error("empty digest accepted")
	}
	if err := db.InsertRevocation(ctx, "", []byte("r"), []byte("s")); err == nil {
		t.Error("empty revocation digest accepted")
	}
	if err := db.InsertRevocation(ctx, "sha256:x", nil, []byte("s")); err == nil {
		t.Error("empty revocation record accepted")
	}
	if _, err := store.Open(ctx, ""); err == nil {
		t.Error("store.Open(\"\") succeeded")
	}
}

// checkContiguous checks that seqs are exactly 1..n in some order.
func checkContiguous(t *testing.T, seqs []int64, n int) {
	t.Helper()
	if len(seqs) != n {
		t.Fatalf("got %d seqs, want %d", len(seqs), n)
	}
	sorted := append([]int64(nil), seqs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	for i, s := range sorted {
		if s != int64(i+1) {
			t.Fatalf("sorted seqs[%d] = %d, want %d (seqs not distinct and contiguous)", i, s, i+1)
		}
	}
}

func TestConcurrentHandles(t *testing.T) {
	const workers, each = 8, 25
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "oa.db")
	dbs := make([]admissions, workers)
	for i := range dbs {
		dbs[i] = openTest(t, path)
	}
	var (
		mu   sync.Mutex
		seqs []int64
		wg   sync.WaitGroup
	)
	errs := make(chan error, workers*each)
	for _, db := range dbs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				seq, err := db.InsertAdmission(ctx, "shared", "sha256:c", numbered("shared"))
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				seqs = append(seqs, seq)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	checkContiguous(t, seqs, workers*each)
	as, err := dbs[0].Admissions(ctx, "shared")
	if err != nil {
		t.Fatal(err)
	}
	stored := make([]int64, len(as))
	for i, a := range as {
		stored[i] = a.Seq
		if want := fmt.Sprintf(`{"package":"shared","seq":%d}`, a.Seq); string(a.Record) != want {
			t.Errorf("record of seq %d = %s", a.Seq, a.Record)
		}
	}
	checkContiguous(t, stored, workers*each)
}

const helperEnv = "OA_STORE_TEST_HELPER_DB"

// TestHelperProcess is not a real test: TestConcurrentProcesses runs the test
// binary again with it as the only test, once per child process.
func TestHelperProcess(t *testing.T) {
	path := os.Getenv(helperEnv)
	if path == "" {
		t.Skip("helper process for TestConcurrentProcesses")
	}
	n, err := strconv.Atoi(os.Getenv(helperEnv + "_N"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	db, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for range n {
		seq, err := admissions{db}.InsertAdmission(ctx, "shared", "sha256:p", numbered("shared"))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("SEQ %d\n", seq)
	}
}

func TestConcurrentProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	const procs, each = 4, 25
	// The children all open a database that does not exist yet, so creating
	// the file and the schema races too.
	path := filepath.Join(t.TempDir(), "home", "oa.db")
	cmds := make([]*exec.Cmd, procs)
	outs := make([]*bytes.Buffer, procs)
	for i := range cmds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), helperEnv+"="+path, helperEnv+"_N="+strconv.Itoa(each))
		outs[i] = new(bytes.Buffer)
		cmd.Stdout, cmd.Stderr = outs[i], outs[i]
		cmds[i] = cmd
	}
	for _, cmd := range cmds {
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
	}
	var seqs []int64
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v\n%s", i, err, outs[i])
		}
		n := 0
		for _, line := range strings.Split(outs[i].String(), "\n") {
			if s, ok := strings.CutPrefix(line, "SEQ "); ok {
				seq, err := strconv.ParseInt(s, 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				seqs = append(seqs, seq)
				n++
			}
		}
		if n != each {
			t.Fatalf("child %d reported %d seqs, want %d:\n%s", i, n, each, outs[i])
		}
	}
	checkContiguous(t, seqs, procs*each)

	db := openTest(t, path)
	as, err := db.Admissions(context.Background(), "shared")
	if err != nil {
		t.Fatal(err)
	}
	stored := make([]int64, len(as))
	for i, a := range as {
		stored[i] = a.Seq
	}
	checkContiguous(t, stored, procs*each)
}

// TestTamperedRowReturnedAsStored documents that the store does not hide or
// repair an edited row: it returns what is in the file, and detecting the
// edit is the job of whoever checks the signature (the admit package).
func TestTamperedRowReturnedAsStored(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "oa.db")
	db := openTest(t, path)
	if _, err := db.InsertAdmission(ctx, "p", "sha256:t", fixed([]byte(`{"expires_at":"2026"}`), []byte("sig"))); err != nil {
		t.Fatal(err)
	}
	if err := db.InsertRevocation(ctx, "sha256:t", []byte("revoked"), []byte("sig")); err != nil {
		t.Fatal(err)
	}

	raw := storetest.RawOpen(t, path)
	// Ordinary SQL cannot rewrite or remove history...
	for _, stmt := range []string{
		`UPDATE admissions SET record = X'00'`,
		`DELETE FROM admissions`,
		`DELETE FROM revocations`,
		`UPDATE revocations SET record = X'00'`,
		`UPDATE admission_sequences SET last_seq = 0`,
		`DELETE FROM admission_sequences`,
	} {
		if _, err := raw.ExecContext(ctx, stmt); err == nil {
			t.Errorf("%s: succeeded, want refused by trigger", stmt)
		}
	}
	// ...but whoever can write the file can drop the triggers.
	tampered := []byte(`{"expires_at":"2099"}`)
	if _, err := raw.ExecContext(ctx, `DROP TRIGGER admissions_no_update`); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.ExecContext(ctx, `UPDATE admissions SET record = ? WHERE package = 'p' AND seq = 1`, tampered); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.ExecContext(ctx, `DROP TRIGGER revocations_no_delete`); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.ExecContext(ctx, `DELETE FROM revocations`); err != nil {
		t.Fatal(err)
	}

	a, ok, err := db.LatestAdmission(ctx, "p")
	if err != nil || !ok {
		t.Fatalf("LatestAdmission = %v, %v", ok, err)
	}
	if !bytes.Equal(a.Record, tampered) || string(a.Signature) != "sig" {
		t.Fatalf("tampered row read back as %q / %q, want it as stored", a.Record, a.Signature)
	}
	if revs, err := db.Revocations(ctx, "sha256:t"); err != nil || len(revs) != 0 {
		t.Fatalf("Revocations after deleting rows = %v, %v", revs, err)
	}
	// The sequence counter still stands, so the number is not handed out again.
	if seq, err := db.InsertAdmission(ctx, "p", "sha256:u", numbered("p")); err != nil || seq != 2 {
		t.Fatalf("insert after tampering = %d, %v; want 2", seq, err)
	}
}

func BenchmarkInsertAdmission(b *testing.B) {
	ctx := context.Background()
	db := openTest(b, filepath.Join(b.TempDir(), "oa.db"))
	rec := bytes.Repeat([]byte("x"), 600)
	sig := bytes.Repeat([]byte("s"), 64)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := db.InsertAdmission(ctx, "bench", "sha256:b", fixed(rec, sig)); err != nil {
			b.Fatal(err)
		}
	}
}

// Close closes the store's database (for the tests that reopen it).
func (s admissions) Close() error { return s.db.Close() }
