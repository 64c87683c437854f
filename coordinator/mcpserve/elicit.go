package mcpserve

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/ir"
)

// A downstream server's elicitation during a read is passed to the person
// behind the calling client through the coordinator's own multi-round-trip
// input request, the way approvals are: the read tool answers with
// InputRequests (key downstreamInput) and a sealed RequestState while the
// downstream call waits, parked; the client's next call with the answer
// finds the parked call by the state and hands the person's answer to the
// downstream server unchanged (accept with content, decline, cancel). The
// connector has already held the requested schema to what the spec
// allows (a flat object of primitive fields) before the coordinator sees
// it. A client before 2026-07-28 is asked every round with
// elicitation/create (rounds.go). A calling client without elicitation
// (or without URL mode, for a URL request), a client that goes away, and a person who does not answer within
// downstreamTTL all yield cancel — never an invented decision. Neither
// the message nor the answer is logged or stored: the operator is told a
// digest of the message only.

// downstreamInput is the key of a forwarded elicitation in InputRequests.
const downstreamInput = "downstream"

// downstreamTTL bounds how long a parked read waits for the person.
const downstreamTTL = 10 * time.Minute

// downstreamState is what a forwarded elicitation's RequestState binds.
type downstreamState struct {
	Tool string `json:"tool"`
	Park string `json:"park"`
}

// elicitAsk is one downstream elicitation waiting for its answer.
type elicitAsk struct {
	params *mcp.ElicitParams
	answer chan *mcp.ElicitResult
}

// parkedRead is a read whose downstream call runs on between rounds.
type parkedRead struct {
	asks    chan *elicitAsk
	done    chan *mcp.CallToolResult
	pending *elicitAsk // the ask shown to the person, answered on the next round
	timer   *time.Timer
}

// parking holds the reads waiting for a person, by park id.
type parking struct {
	mu    sync.Mutex
	reads map[string]*parkedRead
}

func (p *parking) put(id string, r *parkedRead) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reads == nil {
		p.reads = map[string]*parkedRead{}
	}
	p.reads[id] = r
}

func (p *parking) take(id string) *parkedRead {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.reads[id]
	delete(p.reads, id)
	return r
}

// cancelled is the answer given when no person can answer.
func cancelled() *mcp.ElicitResult { return &mcp.ElicitResult{Action: "cancel"} }

// elicitor returns the connector.Elicitor of a parked read: each
// downstream elicitation goes to the read's round loop and waits for its
// answer (or for the downstream call's own deadline).
func (r *parkedRead) elicitor() connector.Elicitor {
	return func(ctx context.Context, params *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		ask := &elicitAsk{params: params, answer: make(chan *mcp.ElicitResult, 1)}
		select {
		case r.asks <- ask:
		case <-ctx.Done():
			return cancelled(), nil
		}
		select {
		case res := <-ask.answer:
			return res, nil
		case <-ctx.Done():
			return cancelled(), nil
		}
	}
}

// drain answers cancel to every further elicitation of r until its call
// ends: nobody is left to ask.
func (r *parkedRead) drain() {
	if r.pending != nil {
		r.pending.answer <- cancelled()
		r.pending = nil
	}
	go func() {
		for {
			select {
			case a := <-r.asks:
				a.answer <- cancelled()
			case <-r.done:
				return
			}
		}
	}()
}

// readForwarding serves a read-only capability tool whose downstream
// server may elicit: a first call starts the read, a call carrying input
// responses continues the parked one.
func (s *mcpServer) readForwarding(ctx context.Context, req *mcp.CallToolRequest, name, capability string, args json.RawMessage) *mcp.CallToolResult {
	var r *parkedRead
	if isAnswer(req) {
		var bad *mcp.CallToolResult
		if r, bad = s.resume(ctx, req, name); bad != nil {
			return bad
		}
	} else {
		r = &parkedRead{asks: make(chan *elicitAsk), done: make(chan *mcp.CallToolResult, 1)}
		// The downstream call outlives this round: it is bounded by the
		// coordinator's own call timeout, not by the client's request.
		dctx := connector.WithElicitor(context.WithoutCancel(ctx), r.elicitor())
		go func() { r.done <- s.read(dctx, name, capability, args) }()
	}
	return s.await(ctx, req, name, capability, r)
}

// resume finds the parked read an answer is for and hands the person's
// answer, unchanged, to the downstream server.
func (s *mcpServer) resume(ctx context.Context, req *mcp.CallToolRequest, name string) (*parkedRead, *mcp.CallToolResult) {
	if req.Params.RequestState == "" {
		return nil, toolError(errState)
	}
	var st downstreamState
	if err := s.c.OpenState(ctx, req.Params.RequestState, &st); err != nil || st.Tool != name {
		return nil, toolError(errState)
	}
	r := s.parked.take(st.Park)
	if r == nil {
		return nil, toolError(errState)
	}
	r.timer.Stop()
	resp, ok := req.Params.InputResponses[downstreamInput].(*mcp.ElicitResult)
	if !ok || len(req.Params.InputResponses) != 1 {
		resp = cancelled()
	}
	r.pending.answer <- resp
	r.pending = nil
	return r, nil
}

// await waits for the read to end or its downstream server to elicit. An
// elicitation the calling client can take is returned as an input request
// (the read parks); any other is answered cancel and the wait goes on.
func (s *mcpServer) await(ctx context.Context, req *mcp.CallToolRequest, name, capability string, r *parkedRead) *mcp.CallToolResult {
	for {
		select {
		case res := <-r.done:
			return res
		case <-ctx.Done():
			r.drain()
			return toolError(errCancelled)
		case ask := <-r.asks:
			if !s.canForward(req, ask.params) {
				ask.answer <- cancelled()
				continue
			}
			return s.park(req, name, capability, r, ask)
		}
	}
}

// canForward reports whether the calling client can be asked: it offers
// elicitation in the request's mode (a client before 2026-07-28 is asked
// every round with elicitation/create, rounds.go).
func (s *mcpServer) canForward(req *mcp.CallToolRequest, params *mcp.ElicitParams) bool {
	caps := req.ClientCapabilities()
	if caps == nil || caps.Elicitation == nil {
		return false
	}
	if params.Mode == "url" {
		if caps.Elicitation.URL == nil {
			return false
		}
	} else if !elicitationOffered(req) {
		return false
	}
	return true
}

// multiRound reports whether the client speaks 2026-07-28 or later, where
// it answers input requests itself for as many rounds as it takes.
func multiRound(req *mcp.CallToolRequest) bool {
	ss, ok := req.GetSession().(*mcp.ServerSession)
	if !ok || ss.InitializeParams() == nil {
		return false
	}
	return ss.InitializeParams().ProtocolVersion >= "2026-07-28"
}

// park answers the round with the downstream's request, labelled with the
// connection and capability it comes from, and keeps the read waiting
// for at most downstreamTTL.
func (s *mcpServer) park(req *mcp.CallToolRequest, name, capability string, r *parkedRead, ask *elicitAsk) *mcp.CallToolResult {
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	park := hex.EncodeToString(id)
	token, err := s.c.SealState(downstreamState{Tool: name, Park: park}, downstreamTTL)
	if err != nil {
		ask.answer <- cancelled()
		r.drain()
		return s.fail(name, err)
	}
	shown := *ask.params
	shown.Meta = nil
	shown.Message = fmt.Sprintf("The app behind connection %q (capability %q) asks: %s", s.c.ConnectionOf(capability), capability, ask.params.Message)
	r.pending = ask
	r.timer = time.AfterFunc(downstreamTTL, func() {
		if s.parked.take(park) == r {
			r.drain()
		}
	})
	s.parked.put(park, r)
	s.operator("read %s: the downstream server asks the person (message %s)", capability, ir.DigestBytes([]byte(ask.params.Message)))
	return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{downstreamInput: &shown}, RequestState: token}
}
