package fleetcmd

import (
	"time"

	"github.com/oa-dev/oa/fleet"
)

// progressInterval is the least time between two progress lines of one
// phase: a fleet of 10,000 hosts shows how far it has come in a line a
// second, not 20,000 lines.
const progressInterval = time.Second

// publishProgress turns fleet.Publish's report of each host into progress
// lines written by step: the first host of a phase, then at most one line
// per interval (by clock), and always the phase's last host, so every
// phase ends on its total.
func publishProgress(step func(format string, args ...any), interval time.Duration, clock func() time.Time) func(fleet.PublishProgress) {
	var last time.Time
	return func(p fleet.PublishProgress) {
		now := clock()
		if p.Done != 1 && p.Done != p.Total && now.Sub(last) < interval {
			return
		}
		last = now
		step("%s %d/%d hosts", phaseVerb(p.Phase), p.Done, p.Total)
	}
}

// phaseVerb says what a phase does to a host, as a progress line shows it.
func phaseVerb(phase fleet.PublishPhase) string {
	if phase == fleet.PhaseRead {
		return "checked the current envelopes of"
	}
	return "published the envelopes of"
}
