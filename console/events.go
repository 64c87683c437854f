package console

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"time"

	"github.com/oa-dev/oa/coordinator"
)

// maxStream is how long one live-update stream lasts; the browser's
// EventSource opens another.
const maxStream = 10 * time.Minute

// inboxStamp names the open items and their states: it changes when a run
// pauses or an item is decided.
func inboxStamp(ctx context.Context, s *Server) (string, error) {
	items, err := coordinator.AttentionRecords(s.h).List(ctx, false)
	if err != nil {
		return "", err
	}
	hash := sha256.New()
	for _, it := range items {
		fmt.Fprintf(hash, "%s %s\n", it.ID, it.State)
	}
	return hex.EncodeToString(hash.Sum(nil)), nil
}

// serveEvents streams server-sent events: "inbox" when the open items
// change. It sends names only, never an item's content; the page asks
// the person to reload (it never reloads under a form being filled).
func (s *Server) serveEvents(w http.ResponseWriter, r *http.Request, sess *session) {
	rc := http.NewResponseController(w)
	ctx, cancel := context.WithTimeout(r.Context(), maxStream)
	defer cancel()
	last, err := inboxStamp(ctx, s)
	if err != nil {
		s.refuse(w, r, sess, http.StatusInternalServerError, err)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	send := func(msg string) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(30 * time.Second))
		if _, err := fmt.Fprint(w, msg); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send("retry: 5000\n\n") {
		return
	}
	tick := time.NewTicker(s.opts.Poll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		stamp, err := inboxStamp(ctx, s)
		if err != nil {
			return
		}
		msg := ": alive\n\n"
		if stamp != last {
			last, msg = stamp, "event: inbox\ndata: changed\n\n"
		}
		if !send(msg) {
			return
		}
	}
}
