package console

import (
	"context"
	"net/http"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/fleet"
)

// fleetPage is the Fleet page: what the host keeps about the fleet it is
// provisioned from (fleet.ReadHostRecord), read from its own host-signed
// records, never the registry.
type fleetPage struct {
	Record *fleet.HostRecord
	// Now is when the page was made, for the expiries said.
	Now time.Time
	// EnvelopeExpired and RevocationsExpired say the envelope or the
	// revocation list the last bound run read has expired: the next
	// provisioning run refuses it until the fleet publishes again.
	EnvelopeExpired, RevocationsExpired bool
	// StatusStale says the last status pushed is older than the fleet's
	// refresh (fleet.DefaultStatusRefresh) with no run since.
	StatusStale bool
}

// fleetShown says whether the navigation links the Fleet page: the host
// policy trusts a fleet and the host keeps a record of it (a record that
// does not verify is shown too, as its refusal).
func (s *Server) fleetShown(ctx context.Context) bool {
	if s.h.Policy.Fleet == nil {
		return false
	}
	rec, err := fleet.ReadHostRecord(ctx, s.h)
	return rec != nil || err != nil
}

func (s *Server) serveFleet(w http.ResponseWriter, r *http.Request, sess *session) {
	rec, err := fleet.ReadHostRecord(r.Context(), s.h)
	if err != nil {
		s.refuse(w, r, sess, http.StatusUnprocessableEntity, err)
		return
	}
	if rec == nil {
		s.refuse(w, r, sess, http.StatusNotFound, blocking.New(blocking.ConsoleRequestInvalid, "this host is not provisioned from a fleet"))
		return
	}
	now := s.opts.Now().UTC()
	page := fleetPage{Record: rec, Now: now}
	if b := rec.Bound; b != nil {
		page.EnvelopeExpired = !now.Before(b.EnvelopeExpiresAt)
		page.RevocationsExpired = !b.RevocationsExpiresAt.IsZero() && !now.Before(b.RevocationsExpiresAt)
		page.StatusStale = now.Sub(b.StatusPushedAt) > fleet.DefaultStatusRefresh
	}
	s.render(w, r, sess, http.StatusOK, "fleet", page)
}
