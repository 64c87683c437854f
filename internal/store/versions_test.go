package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// appendSeq builds a record naming its seq and the seq it replaces.
func appendSeq(seq int64, prev *Version) ([]byte, []byte, error) {
	p := int64(0)
	if prev != nil {
		p = prev.Seq
	}
	return []byte(fmt.Sprintf(`{"seq":%d,"prev":%d}`, seq, p)), []byte("sig"), nil
}

func TestVersionsAppendAndLatest(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, filepath.Join(t.TempDir(), "oa.db"))
	if v, err := db.LatestVersion(ctx, KindConnection, "crm"); err != nil || v != nil {
		t.Fatalf("latest of nothing = %v, %v", v, err)
	}
	for want := int64(1); want <= 3; want++ {
		seq, err := db.InsertVersion(ctx, KindConnection, "crm", appendSeq)
		if err != nil || seq != want {
			t.Fatalf("insert = %d, %v; want %d", seq, err, want)
		}
	}
	if _, err := db.InsertVersion(ctx, KindConnection, "mail", appendSeq); err != nil {
		t.Fatal(err)
	}
	if _, err := db.InsertVersion(ctx, KindBinding, "crm", appendSeq); err != nil {
		t.Fatal(err)
	}
	v, err := db.LatestVersion(ctx, KindConnection, "crm")
	if err != nil || v.Seq != 3 || string(v.Record) != `{"seq":3,"prev":2}` {
		t.Fatalf("latest = %+v, %v", v, err)
	}
	all, err := db.Versions(ctx, KindConnection, "crm")
	if err != nil || len(all) != 3 || all[0].Seq != 1 {
		t.Fatalf("versions = %+v, %v", all, err)
	}
	latest, err := db.LatestVersions(ctx, KindConnection)
	if err != nil || len(latest) != 2 || latest[0].Key != "crm" || latest[0].Seq != 3 || latest[1].Key != "mail" || latest[1].Seq != 1 {
		t.Fatalf("latest versions = %+v, %v", latest, err)
	}
}

func TestVersionsBuildErrorAndAppendOnly(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, filepath.Join(t.TempDir(), "oa.db"))
	boom := errors.New("boom")
	if _, err := db.InsertVersion(ctx, KindRegistry, "host", func(int64, *Version) ([]byte, []byte, error) { return nil, nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("build error = %v", err)
	}
	if _, err := db.InsertVersion(ctx, KindRegistry, "host", func(int64, *Version) ([]byte, []byte, error) { return []byte("r"), nil, nil }); err == nil {
		t.Fatal("empty signature accepted")
	}
	if vs, _ := db.Versions(ctx, KindRegistry, "host"); len(vs) != 0 {
		t.Fatalf("failed inserts wrote %d rows", len(vs))
	}
	if _, err := db.InsertVersion(ctx, KindRegistry, "host", appendSeq); err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{`UPDATE versions SET record = x'00'`, `DELETE FROM versions`} {
		if _, err := db.db.ExecContext(ctx, stmt); err == nil {
			t.Fatalf("%s succeeded on an append-only table", stmt)
		}
	}
}

func TestVersionsConcurrentWritersSeeEachOther(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "oa.db")
	const writers, each = 4, 10
	var wg sync.WaitGroup
	for range writers {
		db := openTest(t, path)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				if _, err := db.InsertVersion(ctx, KindConnection, "crm", appendSeq); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	db := openTest(t, path)
	vs, err := db.Versions(ctx, KindConnection, "crm")
	if err != nil || len(vs) != writers*each {
		t.Fatalf("%d versions, %v", len(vs), err)
	}
	for i, v := range vs {
		if want := fmt.Sprintf(`{"seq":%d,"prev":%d}`, i+1, i); string(v.Record) != want {
			t.Fatalf("version %d = %s, want %s: a writer did not see the version it replaced", i+1, v.Record, want)
		}
	}
}

func TestRunsAttentionReceiptsAndStates(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, filepath.Join(t.TempDir(), "oa.db"))
	if err := db.InsertRun(ctx, Run{RunID: "r1", Deployment: "d", RequestID: "q", State: []byte(`{"n":0}`)}); err != nil {
		t.Fatal(err)
	}
	if err := db.InsertRun(ctx, Run{RunID: "r2", Deployment: "d", RequestID: "q", State: []byte(`{}`)}); !errors.Is(err, ErrConflict) {
		t.Fatalf("second run for one request id: %v", err)
	}
	if err := db.UpdateRun(ctx, "r1", func(b []byte) ([]byte, error) { return append(b[:len(b)-2], []byte("1}")...), nil }); err != nil {
		t.Fatal(err)
	}
	if r, err := db.RunByRequest(ctx, "d", "q"); err != nil || string(r.State) != `{"n":1}` {
		t.Fatalf("run = %+v, %v", r, err)
	}
	if r, err := db.RunByID(ctx, "nope"); r != nil || err != nil {
		t.Fatalf("missing run = %+v, %v", r, err)
	}
	if err := db.PauseRun(ctx, Attention{ID: "a1", RunID: "r1", State: []byte(`{"s":"open"}`)}, func(b []byte) ([]byte, error) { return []byte(`{"n":2}`), nil }); err != nil {
		t.Fatal(err)
	}
	if items, err := db.AttentionItems(ctx); err != nil || len(items) != 1 {
		t.Fatalf("items = %v, %v", items, err)
	}
	if err := db.DecideAttention(ctx, "a1", func(item, run []byte) ([]byte, []byte, error) {
		if string(item) != `{"s":"open"}` || string(run) != `{"n":2}` {
			return nil, nil, fmt.Errorf("decide saw %s and %s", item, run)
		}
		return []byte(`{"s":"approved"}`), []byte(`{"n":3}`), nil
	}); err != nil {
		t.Fatal(err)
	}
	if a, _ := db.AttentionByID(ctx, "a1"); string(a.State) != `{"s":"approved"}` {
		t.Fatalf("item after decide: %s", a.State)
	}
	seal := func(attempt int) (*Receipt, error) {
		r, cp, err := db.SealRun(ctx, "r1", attempt, func(seq int64, prev *Receipt) ([]byte, []byte, string, error) {
			p := ""
			if prev != nil {
				p = fmt.Sprint(prev.Seq)
			}
			return []byte(fmt.Sprint(seq)), []byte("s"), p, nil
		}, func(state, record []byte) ([]byte, error) { return []byte(`{"sealed":` + string(record) + `}`), nil },
			func(r *Receipt, runs int64, prev *Version) ([]byte, []byte, error) {
				if (prev == nil) != (r.Seq == 1) || prev != nil && prev.Seq != r.Seq-1 || runs != 1 {
					return nil, nil, fmt.Errorf("checkpoint of #%d saw runs %d, previous %+v", r.Seq, runs, prev)
				}
				return []byte(fmt.Sprintf(`{"head":%d}`, r.Seq)), []byte("c"), nil
			})
		if (r == nil) != (cp == nil) || cp != nil && cp.Seq != r.Seq {
			t.Fatalf("receipt %+v with checkpoint %+v", r, cp)
		}
		return r, err
	}
	for i := range 3 {
		r, err := seal(i + 1)
		if err != nil || r.Seq != int64(i+1) {
			t.Fatalf("receipt %d = %+v, %v", i, r, err)
		}
	}
	if r, err := seal(2); r != nil || err != nil {
		t.Fatalf("an attempt sealed twice: %+v, %v", r, err)
	}
	if rs, _ := db.Receipts(ctx); len(rs) != 3 || rs[2].PrevDigest != "2" || rs[2].Attempt != 3 {
		t.Fatalf("chain = %+v", rs)
	}
	if v, _ := db.LatestVersion(ctx, KindCheckpoint, CheckpointKey); v == nil || v.Seq != 3 || string(v.Record) != `{"head":3}` {
		t.Fatalf("checkpoint after sealing: %+v", v)
	}
	if r, _ := db.RunByID(ctx, "r1"); string(r.State) != `{"sealed":3}` {
		t.Fatalf("run after sealing: %s", r.State)
	}
	if _, err := db.db.ExecContext(ctx, `DELETE FROM receipts`); err == nil {
		t.Fatal("receipts deleted")
	}
	now := time.Now()
	if err := db.UseState(ctx, "n1", now.Add(time.Minute), now); err != nil {
		t.Fatal(err)
	}
	if err := db.UseState(ctx, "n1", now.Add(time.Minute), now); !errors.Is(err, ErrConflict) {
		t.Fatalf("replayed state: %v", err)
	}
}
