package fleet

import (
	"context"
	"time"

	"github.com/oa-dev/oa/blocking"
)

// MinSyncInterval is the shortest time between two rounds of Sync: a host
// that asks its registry more often than this only adds load, since
// envelopes and revocation lists change on a person's schedule.
const MinSyncInterval = time.Second

// SyncOptions are the settings of Sync.
type SyncOptions struct {
	// ProvisionOptions are each round's; Now is set anew every round.
	ProvisionOptions
	// Interval is the time between the end of one round and the start of
	// the next, at least MinSyncInterval.
	Interval time.Duration
	// Round, when set, is told what each round did: its result (nil when
	// the round ended before there was a status) and its refusal or fault.
	Round func(*Result, error)
}

// Sync keeps the host in home in step with its fleet: it provisions it
// from envelopeRef now and then every Interval until ctx is done, so the
// host picks up new envelopes and the fleet's revocations by itself. A
// round's refusal or a registry outage is handed to Round and the next
// round tries again: one bad round never stops the host from catching up
// later. It returns nil when ctx is done, and refuses an Interval under
// MinSyncInterval (fleet_interval_invalid) before any round runs.
func Sync(ctx context.Context, home, envelopeRef string, opts SyncOptions) error {
	if opts.Interval < MinSyncInterval {
		return blocking.New(blocking.FleetIntervalInvalid, "the sync interval must be at least %s", MinSyncInterval)
	}
	for {
		round := opts.ProvisionOptions
		round.Now = time.Now()
		res, err := Provision(ctx, home, envelopeRef, round)
		if opts.Round != nil {
			opts.Round(res, err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(opts.Interval):
		}
	}
}
