package fleetcmd

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/oa-dev/oa/fleet"
)

// TestPublishProgressLines: a phase of many hosts prints its first host,
// a line per interval and its last, never a line per host.
func TestPublishProgressLines(t *testing.T) {
	var lines []string
	step := func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }
	clock := time.Unix(0, 0)
	report := publishProgress(step, time.Second, func() time.Time { return clock })
	const total = 10000
	for _, phase := range []fleet.PublishPhase{fleet.PhaseRead, fleet.PhaseWrite} {
		for done := 1; done <= total; done++ {
			report(fleet.PublishProgress{Phase: phase, Host: fmt.Sprintf("h%05d", done), Done: done, Total: total})
			clock = clock.Add(time.Millisecond) // 10 s a phase
		}
	}
	want := []string{}
	for _, verb := range []string{"checked the current envelopes of", "published the envelopes of"} {
		want = append(want, verb+" 1/10000 hosts")
		for done := 1001; done < total; done += 1000 {
			want = append(want, fmt.Sprintf("%s %d/10000 hosts", verb, done))
		}
		want = append(want, verb+" 10000/10000 hosts")
	}
	if !slices.Equal(lines, want) {
		t.Fatalf("progress lines:\n%q\nwant\n%q", lines, want)
	}
}
