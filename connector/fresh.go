package connector

import (
	"context"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A server tells its client when its tool list changed
// (notifications/tools/list_changed). freshness counts those notifications
// per client session and remembers the last listing, so a caller can list
// again only when the server said its tools changed or the last listing is
// older than a bound (Session.Fresh). Kept beside Session, keyed by its
// go-sdk client session, and dropped when the session ends.
type freshness struct {
	mu       sync.Mutex
	changes  uint64 // notifications received
	inv      *Inventory
	atChange uint64 // changes when inv was listed
	at       time.Time
}

var freshByClient sync.Map // *mcp.ClientSession → *freshness

func freshnessOf(cs *mcp.ClientSession) *freshness {
	v, _ := freshByClient.LoadOrStore(cs, &freshness{})
	return v.(*freshness)
}

// noteToolsChanged is the client's handler of tools/list_changed.
func noteToolsChanged(_ context.Context, req *mcp.ToolListChangedRequest) {
	f := freshnessOf(req.Session)
	f.mu.Lock()
	f.changes++
	f.mu.Unlock()
}

// Fresh returns the session's last inventory when the server sent no
// tools/list_changed since it was listed and it is younger than maxAge;
// otherwise it lists the tools again (Inventory). Callers that must see
// the live list (before an effect) call Inventory.
func (s *Session) Fresh(ctx context.Context, maxAge time.Duration) (*Inventory, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	f := freshnessOf(s.cs)
	f.mu.Lock()
	inv, changes := f.inv, f.changes
	fresh := inv != nil && f.atChange == changes && time.Since(f.at) < maxAge
	f.mu.Unlock()
	if fresh {
		return inv, nil
	}
	return s.Inventory(ctx)
}

// remember records inv as listed when the session had seen changes
// notifications (read before the listing began, so a notification during
// it makes the next Fresh list again).
func (s *Session) remember(inv *Inventory, changes uint64, at time.Time) {
	f := freshnessOf(s.cs)
	f.mu.Lock()
	if f.inv == nil || !at.Before(f.at) {
		f.inv, f.atChange, f.at = inv, changes, at
	}
	f.mu.Unlock()
}

// changesSeen is how many tools/list_changed the session received.
func (s *Session) changesSeen() uint64 {
	f := freshnessOf(s.cs)
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changes
}

// forgetFreshness drops the session's record when it ends.
func (s *Session) forgetFreshness() { freshByClient.Delete(s.cs) }

// AnnouncesToolChanges reports whether the server promised when the
// session began to announce every change of its tool list
// (tools.listChanged) and can keep that promise for the session's life: a
// server oa started itself, a subprocess or the sandbox, runs the same
// code until it ends. A remote server is never taken at its word: a new
// deployment behind the same address announces nothing to the sessions of
// the one it replaced.
func (s *Session) AnnouncesToolChanges() bool {
	if s.Remote() {
		return false
	}
	res := s.cs.InitializeResult()
	return res != nil && res.Capabilities != nil && res.Capabilities.Tools != nil && res.Capabilities.Tools.ListChanged
}
