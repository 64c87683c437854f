package connector

import (
	"context"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Elicitor answers a downstream server's elicitation/create for the person
// behind one call. It returns the person's answer unchanged, or cancel.
// The request is as the server sent it; the Elicitor checks it.
type Elicitor func(ctx context.Context, req *mcp.ElicitParams) (*mcp.ElicitResult, error)

type elicitorKey struct{}

// WithElicitor returns ctx carrying f: a Call made with it routes the
// server's elicitation requests during that call to f.
func WithElicitor(ctx context.Context, f Elicitor) context.Context {
	return context.WithValue(ctx, elicitorKey{}, f)
}

// elicitRouter routes a session's incoming elicitation requests to the
// Elicitor of the call in flight. The go-sdk does not say which call a
// server request belongs to, so a request is routed only when exactly one
// call with an Elicitor is in flight on the session; otherwise (none, or
// several and no way to tell whose person to ask) it is answered cancel,
// never an invented decision.
type elicitRouter struct {
	mu      sync.Mutex
	next    int
	pending map[int]Elicitor
}

// enter registers the Elicitor of ctx (if any) for one call; the returned
// func removes it.
func (r *elicitRouter) enter(ctx context.Context) func() {
	f, _ := ctx.Value(elicitorKey{}).(Elicitor)
	if f == nil {
		return func() {}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pending == nil {
		r.pending = map[int]Elicitor{}
	}
	r.next++
	id := r.next
	r.pending[id] = f
	return func() {
		r.mu.Lock()
		delete(r.pending, id)
		r.mu.Unlock()
	}
}

// handle answers one elicitation/create.
func (r *elicitRouter) handle(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	r.mu.Lock()
	var only Elicitor
	if len(r.pending) == 1 {
		for _, f := range r.pending {
			only = f
		}
	}
	r.mu.Unlock()
	if only == nil || req.Params == nil {
		return &mcp.ElicitResult{Action: "cancel"}, nil
	}
	return only(ctx, req.Params)
}
