package admit

import (
	"context"
	"testing"

	"github.com/oa-dev/oa/internal/store"
	"github.com/oa-dev/oa/internal/store/storetest"
)

// TestAdmissionsOfMainDatabase: admit's typed store reads the admissions
// and revocations a database written by main's code (before the tables
// moved here) holds, and the package's sequence counter goes on from
// there (see internal/store/storetest/testdata/README.md).
func TestAdmissionsOfMainDatabase(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, storetest.MainDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := admissions{db}
	as, err := s.AdmissionsOf(ctx, "sha256:aaaa")
	if err != nil || len(as) != 1 || as[0].Package != "acme/triage" || as[0].Seq != 1 || string(as[0].Record) != `{"admission":1}` {
		t.Fatalf("admissions of main's digest = %+v, %v", as, err)
	}
	if latest, ok, err := s.LatestAdmission(ctx, "acme/triage"); err != nil || !ok || latest.Seq != 1 {
		t.Fatalf("latest = %+v, %v, %v", latest, ok, err)
	}
	if revs, err := s.Revocations(ctx, "sha256:bbbb"); err != nil || len(revs) != 1 || string(revs[0].Signature) != "sig:rev" {
		t.Fatalf("revocations = %+v, %v", revs, err)
	}
	if seq, err := s.InsertAdmission(ctx, "acme/triage", "sha256:cccc", fixed([]byte(`{"admission":2}`), []byte("sig"))); err != nil || seq != 2 {
		t.Fatalf("next admission = %d, %v; want 2", seq, err)
	}
}
