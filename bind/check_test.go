package bind_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oa-dev/oa/bind"
	"github.com/oa-dev/oa/connection"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/resolve"
)

// TestCheckerAgreesWithCheck: a Checker remembers an approved check only
// while its signed inputs are unchanged. After each change (the registry
// file edited, then restored; the connection disabled, then enabled; the
// admission expired) it gives exactly bind.Check's verdict, changed links
// and all.
func TestCheckerAgreesWithCheck(t *testing.T) {
	ctx := context.Background()
	f, b := newFixture(t)
	art, err := bind.FetchRelease(ctx, f.host, b, oci.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	k := bind.NewChecker(f.host, b, art)
	now := time.Now()
	agree := func(what string, at time.Time, approved bool) {
		t.Helper()
		fresh, _, err := bind.Check(ctx, f.host, b, art, bind.CheckOptions{Now: at})
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := k.Check(ctx, at)
		if err != nil {
			t.Fatal(err)
		}
		if fresh.Approved != approved || got.Approved != approved || len(got.Changes) != len(fresh.Changes) || got.NotAdmitted() != fresh.NotAdmitted() {
			t.Fatalf("%s: Checker %+v, Check %+v, want approved=%v", what, got, fresh, approved)
		}
		for i := range got.Changes {
			if got.Changes[i] != fresh.Changes[i] {
				t.Fatalf("%s: Checker names %+v, Check %+v", what, got.Changes[i], fresh.Changes[i])
			}
		}
	}
	agree("unchanged", now, true)
	agree("unchanged, remembered", now, true)
	path := filepath.Join(f.Home, resolve.RegistryFile)
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const line = `description: "Append one note to a record."`
	edited := strings.Replace(string(src), line, line+"\n\t\tapproval:    \"required\"", 1)
	if edited == string(src) {
		t.Fatal("starter registry changed: cannot mark records.note.append approval required")
	}
	if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	agree("registry edited", now, false)
	if err := os.WriteFile(path, src, 0o644); err != nil {
		t.Fatal(err)
	}
	agree("registry restored", now, true)
	if _, err := connection.SetEnabled(ctx, f.host, "records", false, f.Change()); err != nil {
		t.Fatal(err)
	}
	agree("connection disabled", now, false)
	if _, err := connection.SetEnabled(ctx, f.host, "records", true, f.Change()); err != nil {
		t.Fatal(err)
	}
	agree("connection enabled again", now, true)
	later := now.AddDate(50, 0, 0)
	agree("admission expired", later, false)
	if got, _, _ := k.Check(ctx, later); !got.NotAdmitted() {
		t.Fatalf("an expired admission is not named: %+v", got.Refusals)
	}
}
