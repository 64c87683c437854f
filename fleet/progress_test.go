package fleet_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oa-dev/oa/fleet"
	"github.com/oa-dev/oa/testkit/fleettest"
)

// TestPublishProgressSeesEveryHost: Options.Progress is told of every host
// once per phase, reading before writing, counting 1 … total one call at
// a time, on a first publish (everything written) and a second one
// (everything unchanged).
func TestPublishProgressSeesEveryHost(t *testing.T) {
	f := fleettest.New(t)
	var hosts []string
	for i := range 40 {
		hosts = append(hosts, fmt.Sprintf("h%02d", i))
	}
	spec := f.LoadSpec(hosts...)
	now := time.Now()
	for _, run := range []string{"first", "unchanged"} {
		var seen []fleet.PublishProgress
		var inside atomic.Int32
		progress := func(p fleet.PublishProgress) {
			if inside.Add(1) != 1 {
				t.Errorf("%s: progress called concurrently", run)
			}
			seen = append(seen, p)
			inside.Add(-1)
		}
		if _, err := fleet.Publish(context.Background(), spec, f.Key.Signer, fleet.Options{Now: now, Progress: progress}); err != nil {
			t.Fatal(err)
		}
		if len(seen) != 2*len(hosts) {
			t.Fatalf("%s: %d progress calls, want %d (every host read, then written)", run, len(seen), 2*len(hosts))
		}
		for i, phase := range []fleet.PublishPhase{fleet.PhaseRead, fleet.PhaseWrite} {
			calls := seen[i*len(hosts) : (i+1)*len(hosts)]
			var named []string
			for n, p := range calls {
				if p.Phase != phase || p.Done != n+1 || p.Total != len(hosts) {
					t.Fatalf("%s: call %d of %s is %+v", run, n, phase, p)
				}
				named = append(named, p.Host)
			}
			slices.Sort(named)
			if !slices.Equal(named, hosts) {
				t.Fatalf("%s: %s reported hosts %v, want %v", run, phase, named, hosts)
			}
		}
	}
}
