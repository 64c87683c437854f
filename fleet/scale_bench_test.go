package fleet_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/oa-dev/oa/fleet"
	"github.com/oa-dev/oa/testkit/fleettest"
)

// benchHosts is the fleet size of the in-process scale benchmarks:
// OA_BENCH_HOSTS, default 1,000 (BenchmarkFleetScale in cmd/oa times the
// commands at 10,000).
func benchHosts(b *testing.B) []string {
	n := 1000
	if v := os.Getenv("OA_BENCH_HOSTS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n <= 0 {
			b.Fatalf("OA_BENCH_HOSTS=%q", v)
		}
	}
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("h%05d", i)
	}
	return ids
}

// BenchmarkScaleInProcess: the library calls behind `oa fleet publish`
// (unchanged fleet) and `oa fleet status`, in this process, so that a
// CPU profile (-cpuprofile) sees where their time goes: loading the
// fleet file, and reading every host.
func BenchmarkScaleInProcess(b *testing.B) {
	ids := benchHosts(b)
	f := fleettest.New(b)
	specFile := f.WriteSpec(f.Spec(f.Release, ids, ""))
	f.PushStatuses(ids, fleettest.OtherKey(b), time.Now())
	ctx := context.Background()
	b.Run("load-spec", func(b *testing.B) {
		for b.Loop() {
			if _, err := fleet.LoadSpec(specFile); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("status", func(b *testing.B) {
		for b.Loop() {
			s, err := fleet.LoadSpec(specFile)
			if err != nil {
				b.Fatal(err)
			}
			list, err := fleet.ReadStatuses(ctx, s, time.Now(), time.Hour, fleet.Options{})
			if err != nil || len(list) != len(ids) || list[0].Signed != fleet.SignedSelf {
				b.Fatalf("%v %+v", err, list[0])
			}
		}
	})
	b.Run("publish-unchanged", func(b *testing.B) {
		s, err := fleet.LoadSpec(specFile)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := fleet.Publish(ctx, s, f.Key.Signer, fleet.Options{}); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			s, err := fleet.LoadSpec(specFile)
			if err != nil {
				b.Fatal(err)
			}
			pubs, err := fleet.Publish(ctx, s, f.Key.Signer, fleet.Options{})
			if err != nil || len(pubs) != len(ids) || pubs[0].Changed {
				b.Fatalf("%v", err)
			}
		}
	})
}
