package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
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
	if v, err := db.Versions().Latest(ctx, KindConnection, "crm"); err != nil || v != nil {
		t.Fatalf("latest of nothing = %v, %v", v, err)
	}
	for want := int64(1); want <= 3; want++ {
		seq, err := db.Versions().Insert(ctx, KindConnection, "crm", appendSeq)
		if err != nil || seq != want {
			t.Fatalf("insert = %d, %v; want %d", seq, err, want)
		}
	}
	if _, err := db.Versions().Insert(ctx, KindConnection, "mail", appendSeq); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Versions().Insert(ctx, KindBinding, "crm", appendSeq); err != nil {
		t.Fatal(err)
	}
	v, err := db.Versions().Latest(ctx, KindConnection, "crm")
	if err != nil || v.Seq != 3 || string(v.Record) != `{"seq":3,"prev":2}` {
		t.Fatalf("latest = %+v, %v", v, err)
	}
	all, err := db.Versions().History(ctx, KindConnection, "crm")
	if err != nil || len(all) != 3 || all[0].Seq != 1 {
		t.Fatalf("versions = %+v, %v", all, err)
	}
	latest, err := db.Versions().LatestOfKind(ctx, KindConnection)
	if err != nil || len(latest) != 2 || latest[0].Key != "crm" || latest[0].Seq != 3 || latest[1].Key != "mail" || latest[1].Seq != 1 {
		t.Fatalf("latest versions = %+v, %v", latest, err)
	}
}

func TestVersionsBuildErrorAndAppendOnly(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, filepath.Join(t.TempDir(), "oa.db"))
	boom := errors.New("boom")
	if _, err := db.Versions().Insert(ctx, KindRegistry, "host", func(int64, *Version) ([]byte, []byte, error) { return nil, nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("build error = %v", err)
	}
	if _, err := db.Versions().Insert(ctx, KindRegistry, "host", func(int64, *Version) ([]byte, []byte, error) { return []byte("r"), nil, nil }); err == nil {
		t.Fatal("empty signature accepted")
	}
	if vs, _ := db.Versions().History(ctx, KindRegistry, "host"); len(vs) != 0 {
		t.Fatalf("failed inserts wrote %d rows", len(vs))
	}
	if _, err := db.Versions().Insert(ctx, KindRegistry, "host", appendSeq); err != nil {
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
				if _, err := db.Versions().Insert(ctx, KindConnection, "crm", appendSeq); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	db := openTest(t, path)
	vs, err := db.Versions().History(ctx, KindConnection, "crm")
	if err != nil || len(vs) != writers*each {
		t.Fatalf("%d versions, %v", len(vs), err)
	}
	for i, v := range vs {
		if want := fmt.Sprintf(`{"seq":%d,"prev":%d}`, i+1, i); string(v.Record) != want {
			t.Fatalf("version %d = %s, want %s: a writer did not see the version it replaced", i+1, v.Record, want)
		}
	}
}
