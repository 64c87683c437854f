package mcpserve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/coordinator/attention"
	"github.com/oa-dev/oa/internal/canonical"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/telemetry"
)

// MetaCapability is the _meta key of a read-only capability tool that
// names the capability it reads (the tool name is contract.ToolName of it).
const MetaCapability = "dev.oa/capability"

// Serve serves c's tools over t (stdio in production) until the client
// goes away or ctx ends.
func Serve(ctx context.Context, c *coordinator.Coordinator, t mcp.Transport) error {
	ctx, span := telemetry.StartSession(ctx, c.Deployment(), c.PlanDigest())
	defer span.End("")
	return NewServer(c).Run(ctx, t)
}

// ServerName is the MCP implementation name the coordinator announces.
const ServerName = "oa-coordinator"

// approvalTTL is how long a person has to answer an approval form.
const approvalTTL = 15 * time.Minute

// approvalInput is the key of the approval form in InputRequests.
const approvalInput = "approval"

// Decision channels and deciders recorded for MCP decisions.
const (
	ChannelElicitation = "elicitation"
	ChannelMCP         = "mcp"
	ByElicitation      = "mcp-elicitation"
	ByCallingAgent     = "mcp-calling-agent"
)

type mcpServer struct {
	c       *coordinator.Coordinator
	schemas map[string]toolSchemas
	// parked holds reads whose downstream server waits for the person
	// (elicit.go).
	parked parking
}

// NewServer builds the MCP server of c's deployment.
func NewServer(c *coordinator.Coordinator) *mcp.Server {
	s := &mcpServer{c: c, schemas: map[string]toolSchemas{}}
	srv := mcp.NewServer(&mcp.Implementation{Name: ServerName, Title: "oa coordinator", Version: "v1"}, &mcp.ServerOptions{
		Instructions: "Governed workflows of deployment " + c.Deployment() + ". Start with list_workflows; run one with run_workflow and your own request_id; every result carries one outcome (done, needs_review, not_sure_if_saved, did_not_run, or running) with fixed what_happened and next_action.",
		Logger:       slog.New(slog.DiscardHandler),
	})
	for _, t := range s.tools() {
		srv.AddTool(t.tool, s.guard(t.tool.Name, t.handle))
	}
	srv.AddReceivingMiddleware(fixedProtocolErrors)
	srv.AddSendingMiddleware(keepAnswer)
	return srv
}

// fixedProtocolErrors replaces the text of protocol errors of tools/call
// (which the SDK words itself, quoting an unknown tool's name, say) with
// fixed copy; the handlers here never return one.
func fixedProtocolErrors(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err == nil || method != "tools/call" {
			return res, err
		}
		fixed := &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: callNotServed}
		var we *jsonrpc.Error
		if errors.As(err, &we) && we.Code == jsonrpc.CodeInvalidParams {
			fixed = &jsonrpc.Error{Code: we.Code, Message: invalidToolCall}
		}
		return nil, fixed
	}
}

// The fixed copy of tools/call's protocol errors.
const (
	callNotServed   = "the call could not be served"
	invalidToolCall = "no such tool, or the call's parameters are malformed; see tools/list"
)

type toolDef struct {
	tool   *mcp.Tool
	handle func(ctx context.Context, req *mcp.CallToolRequest, args json.RawMessage) *mcp.CallToolResult
}

func yes() *bool { b := true; return &b }
func no() *bool  { b := false; return &b }

func (s *mcpServer) add(defs *[]toolDef, name, description string, in, out any, ann *mcp.ToolAnnotations, h func(context.Context, *mcp.CallToolRequest, json.RawMessage) *mcp.CallToolResult) {
	ts, err := newToolSchemas(in, out)
	if err != nil {
		panic(fmt.Sprintf("coordinator: tool %s: %v", name, err)) // the schemas are written here: a bug
	}
	s.schemas[name] = ts
	*defs = append(*defs, toolDef{&mcp.Tool{Name: name, Description: description, InputSchema: ts.in, OutputSchema: ts.out, Annotations: ann}, h})
}

func (s *mcpServer) tools() []toolDef {
	var defs []toolDef
	result := resultSchema()
	itemSchema := attentionSchema()

	// Reading the coordinator's own records: read-only, idempotent, and a
	// closed world (no downstream app is called).
	local := func(title string) *mcp.ToolAnnotations {
		return &mcp.ToolAnnotations{Title: title, ReadOnlyHint: true, IdempotentHint: true, DestructiveHint: no(), OpenWorldHint: no()}
	}

	s.add(&defs, contract.ToolListWorkflows,
		"List the workflows this deployment can run: one card per workflow with its purpose, what done means, the JSON Schema of its inputs, the consequential capabilities it may use and which of them need a person's approval. Reads only.",
		emptyInput(), workflowsSchema(), local("List workflows"), s.listWorkflows)

	s.add(&defs, contract.ToolRunWorkflow,
		"Run a workflow with inputs matching its input_schema from list_workflows. request_id is required and is yours: the same request_id always answers the same request (replayed: true) and never repeats a change; the same request_id with other inputs is refused; use a new request_id only for a new request. Waits up to wait_seconds for a terminal outcome, else answers running (poll get_run). The result is one outcome — done, needs_review, not_sure_if_saved, did_not_run — with a closed reason, safe_to_retry, record_changed, proof and fixed what_happened/next_action. When a step needs a person's approval and your client offers form elicitation, the person is asked in a form; after they approve, the run continues in the same call.",
		obj(map[string]any{
			contract.ArgWorkflow:    map[string]any{"type": "string", "minLength": 1, "maxLength": 128, "description": "The workflow's name from list_workflows."},
			contract.ArgInputs:      map[string]any{"type": "object", "description": "The workflow's inputs, matching its input_schema."},
			contract.ArgRequestID:   idString("Your id for this request: 1 to 128 letters, digits and . _ : - . Reuse it only to ask about the same request."),
			contract.ArgWaitSeconds: waitSeconds(),
		}, contract.ArgWorkflow, contract.ArgInputs, contract.ArgRequestID),
		result,
		// Not read-only: a workflow may make consequential changes in a
		// downstream app. Destructive: the coordinator serves whatever
		// consequential capabilities the package binds and cannot prove
		// they only add, so it claims no less. Idempotent: request_id is
		// a required argument and the same arguments never make a change
		// twice (at most once per request_id). Open world: it calls
		// downstream apps.
		&mcp.ToolAnnotations{Title: "Run a workflow", ReadOnlyHint: false, DestructiveHint: yes(), IdempotentHint: true, OpenWorldHint: yes()},
		s.runWorkflow)

	s.add(&defs, contract.ToolGetRun,
		"Get a run's current result by run_id, waiting up to wait_seconds for it to become terminal. Same result contract as run_workflow. Reads only; never starts or resumes a run.",
		obj(map[string]any{
			contract.ArgRunID:       idString("A run_id returned by run_workflow."),
			contract.ArgWaitSeconds: waitSeconds(),
		}, contract.ArgRunID),
		result, local("Get a run"), s.getRun)

	s.add(&defs, contract.ToolListNeedsAttention,
		"List the paused runs waiting for a person's decision (open attention items). Reads only.",
		emptyInput(), obj(map[string]any{"items": map[string]any{"type": "array", "items": itemSchema}}, "items"),
		local("List runs that need attention"), s.listAttention)

	s.add(&defs, contract.ToolGetAttentionItem,
		"Get one attention item: the paused run, the step and capability waiting for a decision, and its state. Reads only.",
		obj(map[string]any{contract.ArgAttentionID: idString("An attention_id from a result or list_needs_attention.")}, contract.ArgAttentionID),
		itemSchema, local("Get an attention item"), s.getAttention)

	s.add(&defs, contract.ToolDecide,
		"Relay a person's decision on a paused run: approve, reject, escalate, skip or teach. Approve, skip (only where the item says skippable) and teach (a request for a revised package version, which leaves the run paused) always come from the person: with a client that offers form elicitation the person is asked in a form; a client without it cannot make them (the person uses `oa attention approve|skip|teach ID --as NAME` on the host). Reject and escalate are relayed as given. After an approval or a skip, call run_workflow again with the same request_id and the same inputs to continue the run.",
		obj(map[string]any{
			contract.ArgAttentionID: idString("The attention item's id."),
			contract.ArgDecision:    enum("The decision.", decisionValues()),
		}, contract.ArgAttentionID, contract.ArgDecision),
		obj(map[string]any{"attention_item": itemSchema, "next_action": str("Fixed copy: what to do next.")}, "attention_item", "next_action"),
		// A decision is final and moves a run on (or ends it), so it is
		// neither read-only nor idempotent, and it may be destructive:
		// a rejection ends the run for good. It calls no downstream app.
		&mcp.ToolAnnotations{Title: "Decide on a paused run", ReadOnlyHint: false, DestructiveHint: yes(), IdempotentHint: false, OpenWorldHint: no()},
		s.decide)

	for _, rt := range s.c.ReadTools() {
		out, err := readResultSchema(rt.Capability, rt.OutputSchema)
		if err != nil {
			panic(fmt.Sprintf("coordinator: read tool %s: %v", rt.Name, err)) // verified when the connection was
		}
		desc := rt.Description
		if desc == "" {
			desc = "Read capability " + rt.Capability + "."
		}
		// The tool name has no dots (several MCP clients refuse them), so
		// the capability id is said in the description, the title and
		// _meta.
		desc += " Capability " + rt.Capability + ". Reads only, through the approved plan; the answer's content is the app's answer, checked against its schema, or, for an app that answers in text, server_content: the app's content blocks as it sent them (at most " + connector.ContentBound + ")."
		capability, name := rt.Capability, rt.Name
		s.add(&defs, rt.Name, desc, rt.InputSchema, out,
			// Reads a downstream app: read-only and idempotent, open world.
			&mcp.ToolAnnotations{Title: "Read " + rt.Capability, ReadOnlyHint: true, IdempotentHint: true, DestructiveHint: no(), OpenWorldHint: yes()},
			func(ctx context.Context, req *mcp.CallToolRequest, args json.RawMessage) *mcp.CallToolResult {
				return s.readForwarding(ctx, req, name, capability, args)
			})
		defs[len(defs)-1].tool.Meta = mcp.Meta{MetaCapability: rt.Capability}
	}
	return defs
}

// guard checks a call's arguments against the tool's input schema, turns a
// panic into a fixed-copy error and never lets a Go error reach the
// client (the SDK would send its text).
func (s *mcpServer) guard(name string, h func(context.Context, *mcp.CallToolRequest, json.RawMessage) *mcp.CallToolResult) mcp.ToolHandler {
	ts := s.schemas[name]
	return func(ctx context.Context, req *mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
		defer func() {
			if p := recover(); p != nil {
				s.operator("tool %s: panic: %v\n%s", name, p, debug.Stack())
				res, err = toolError(errInternal), nil
			}
		}()
		args := req.Params.Arguments
		if len(args) == 0 || string(args) == "null" {
			args = json.RawMessage("{}")
		}
		if !conformsTo(ts.inRes, args) {
			return toolError(errArguments), nil
		}
		// A traceparent the client sent in _meta parents what this call
		// does; a client before 2026-07-28 is asked every round here
		// (rounds.go).
		return s.withRounds(telemetry.FromMeta(ctx, req.Params.Meta), req, args, h), nil
	}
}

func (s *mcpServer) operator(format string, a ...any) {
	fmt.Fprintf(s.c.Operator(), "oa coordinator: deployment %s: "+format+"\n", append([]any{s.c.Deployment()}, a...)...)
}

// answer is a structured result, checked against the tool's output schema:
// what does not match is not sent.
func (s *mcpServer) answer(tool string, v any) *mcp.CallToolResult {
	b, err := json.Marshal(v)
	if err != nil {
		s.operator("tool %s: encoding the result: %v", tool, err)
		return toolError(errInternal)
	}
	if !conformsTo(s.schemas[tool].outRes, b) {
		s.operator("tool %s: the result does not match the output schema; not sent", tool)
		return toolError(errInternal)
	}
	return &mcp.CallToolResult{StructuredContent: json.RawMessage(b), Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}
}

// fail maps an error to a fixed-copy tool error. A fault's text goes to
// the operator only.
func (s *mcpServer) fail(tool string, err error) *mcp.CallToolResult {
	if refusals := blocking.Refusals(err); len(refusals) > 0 {
		code := refusals[0].Code
		telemetry.Refused(context.Background(), string(code))
		if te, ok := toolErrorsByCode[code]; ok {
			return toolError(te)
		}
		if e, ok := blocking.Lookup(code); ok {
			return toolError(toolErr{Code: string(code), Message: e.Title + "."})
		}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return toolError(errCancelled)
	}
	s.operator("tool %s: fault: %v", tool, err)
	return toolError(errInternal)
}

// toolErr is the fixed copy of a tool error.
type toolErr struct {
	Code    string `json:"error"`
	Message string `json:"message"`
}

var (
	errArguments = toolErr{"arguments_invalid", "The arguments do not match this tool's inputSchema; nothing was done. Check the required arguments, their types and limits."}
	errInternal  = toolErr{"internal_error", "The coordinator could not answer this call; nothing more is known here. The operator can see why on the host."}
	errCancelled = toolErr{"cancelled", "The call ended before an answer. For a run, ask get_run (or run_workflow with the same request_id) what happened."}
	errNeedsUser = toolErr{"approval_needs_person", "Approve, skip and teach must come from a person, and this client offers no form elicitation to ask them. The person decides on the host with `oa attention approve|skip|teach ID --as NAME`; reject and escalate can be relayed here."}
	errState     = toolErr{string(blocking.RequestStateInvalid), "The approval answer was refused: its request state is missing, forged, changed, expired or already used, so no decision was recorded. Call the tool again to ask the person afresh."}
)

var toolErrorsByCode = map[blocking.Code]toolErr{
	blocking.RequestStateInvalid: errState,
	blocking.RunUnknown:          {string(blocking.RunUnknown), "There is no run with that run_id on this deployment. Use a run_id returned by run_workflow."},
	blocking.AttentionUnknown:    {string(blocking.AttentionUnknown), "There is no attention item with that attention_id on this deployment. See list_needs_attention."},
	blocking.AttentionDecided:    {string(blocking.AttentionDecided), "That attention item was already decided; a decision is final. See get_attention_item or get_run."},
	blocking.DecisionInvalid:     {string(blocking.DecisionInvalid), "That decision cannot be made this way. Decide with approve, reject, escalate, skip or teach; approve, skip and teach need the person."},
	blocking.SkipNotDeclared:     {string(blocking.SkipNotDeclared), "The package does not let this step be skipped; nothing was recorded. The person may approve, reject, escalate or teach."},
	blocking.TeachRequestsFull:   {string(blocking.TeachRequestsFull), "This paused run already holds the most requests for a revised package it may; nothing was recorded. The operator reads them on the host."},
	blocking.TeachTextInvalid:    {string(blocking.TeachTextInvalid), "The person's request could not be recorded (empty, too long, or holding customer data); nothing was recorded. Ask the person to give it again without customer data."},
	blocking.RequestIDInvalid:    {string(blocking.RequestIDInvalid), "request_id is missing or malformed: give 1 to 128 letters, digits and . _ : - ."},
}

func toolError(e toolErr) *mcp.CallToolResult {
	b, _ := json.Marshal(e)
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}
}

// ---- tools -----------------------------------------------------------

type workflowsOut struct {
	Deployment string                     `json:"deployment"`
	Mode       string                     `json:"mode"`
	Workflows  []coordinator.WorkflowCard `json:"workflows"`
}

func (s *mcpServer) listWorkflows(_ context.Context, _ *mcp.CallToolRequest, _ json.RawMessage) *mcp.CallToolResult {
	w := s.c.Workflows()
	if w == nil {
		w = []coordinator.WorkflowCard{}
	}
	return s.answer(contract.ToolListWorkflows, workflowsOut{s.c.Deployment(), s.c.Mode(), w})
}

type runArgs struct {
	Workflow    string          `json:"workflow"`
	Inputs      json.RawMessage `json:"inputs"`
	RequestID   string          `json:"request_id"`
	WaitSeconds *int            `json:"wait_seconds"`
}

func wait(seconds *int) time.Duration {
	n := contract.WaitSecondsDefault
	if seconds != nil {
		n = *seconds
	}
	return time.Duration(min(max(n, 0), contract.WaitSecondsMax)) * time.Second
}

// approvalState is what a sealed RequestState binds.
type approvalState struct {
	Tool        string `json:"tool"`
	RunID       string `json:"run_id,omitempty"`
	AttentionID string `json:"attention_id"`
	Step        string `json:"step"`
	Capability  string `json:"capability"`
	Workflow    string `json:"workflow"`
	RequestID   string `json:"request_id,omitempty"`
	Fingerprint string `json:"fingerprint,omitempty"`
	// Form is the form the person was shown: formDecision (the default)
	// or formTeach.
	Form string `json:"form,omitempty"`
	// Skippable says the decision form offered skip.
	Skippable bool `json:"skippable,omitempty"`
	// Replayed is the replayed of the call's first round: the rounds of
	// one call answer as that call (a run the call itself started is not
	// replayed by the round that carries the person's answer).
	Replayed bool `json:"replayed,omitempty"`
}

// Forms of an approval round.
const (
	formDecision = ""
	formTeach    = "teach"
)

// requestFingerprint is a keyed fingerprint of a run request, bound into
// its approval state so an answer cannot be carried over to other inputs.
func (s *mcpServer) requestFingerprint(a runArgs) (string, error) {
	in, err := canonical.Transform(a.Inputs)
	if err != nil {
		return "", err
	}
	return s.c.Fingerprint([]byte("mcp-approval/v1"), []byte(a.Workflow), in, []byte(a.RequestID)), nil
}

func (s *mcpServer) runWorkflow(ctx context.Context, req *mcp.CallToolRequest, raw json.RawMessage) *mcp.CallToolResult {
	var a runArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return toolError(errArguments)
	}
	fp, err := s.requestFingerprint(a)
	if err != nil {
		return toolError(errArguments)
	}
	rr := coordinator.RunRequest{Workflow: a.Workflow, Inputs: a.Inputs, RequestID: a.RequestID, Wait: wait(a.WaitSeconds)}

	answered := false
	var askedFor string
	round, replayed := false, false // an answer round, and its call's first round's replayed
	if isQuestionAnswer(req) {
		// The person answered the app's question (questionmcp.go): the
		// run goes on; wait for it again below.
		st, bad := s.questionAnswered(ctx, req, contract.ToolRunWorkflow)
		if bad != nil {
			return bad
		}
		if st.RequestID != a.RequestID || st.Fingerprint != fp {
			return toolError(errState)
		}
		round, replayed = true, st.Replayed
	} else if isAnswer(req) {
		st, decision, bad := s.openAnswer(ctx, req, contract.ToolRunWorkflow)
		if bad != nil {
			return bad
		}
		if st.RequestID != a.RequestID || st.Workflow != a.Workflow || st.Fingerprint != fp {
			return toolError(errState)
		}
		answered, askedFor = true, st.AttentionID
		round, replayed = true, st.Replayed
		if decision != nil {
			if _, err := s.c.Decide(ctx, attention.Decision{AttentionID: st.AttentionID, Decision: decision.decision, Text: decision.text, By: ByElicitation, Channel: ChannelElicitation}); err != nil && !blocking.Has(err, blocking.AttentionDecided) {
				return s.fail(contract.ToolRunWorkflow, err)
			}
		}
	}
	res, err := s.c.Run(ctx, rr)
	if err != nil {
		return s.fail(contract.ToolRunWorkflow, err)
	}
	if round {
		// The run was found by the call's own first round: it answers as
		// that round did.
		cp := *res
		cp.Replayed = replayed
		res = &cp
	}
	if res.Reason == contract.ReasonDownstreamQuestion && res.AttentionID != "" {
		if ask := s.askQuestion(req, questionState{Tool: contract.ToolRunWorkflow, AttentionID: res.AttentionID, RequestID: a.RequestID, Fingerprint: fp, Replayed: res.Replayed}); ask != nil {
			return ask
		}
	}
	// Ask the person when the run waits for an approval and the client can
	// ask — but not again for the item just answered without a decision
	// (declined or cancelled form): that run stays needs_review.
	if (res.Reason == contract.ReasonApprovalRequired || res.Reason == contract.ReasonApprovalAfterChange) && res.AttentionID != "" && elicitationOffered(req) && !(answered && res.AttentionID == askedFor) {
		item, err := s.c.AttentionItem(ctx, res.AttentionID)
		if err != nil {
			return s.fail(contract.ToolRunWorkflow, err)
		}
		if item.State == attention.Open {
			return s.ask(ctx, contract.ToolRunWorkflow, approvalState{Tool: contract.ToolRunWorkflow, RunID: res.RunID, AttentionID: item.ID, Step: item.Step, Capability: item.Capability, Workflow: item.Workflow, RequestID: a.RequestID, Fingerprint: fp, Skippable: item.Skippable, Replayed: res.Replayed}, item)
		}
	}
	return s.answer(contract.ToolRunWorkflow, s.shown(res))
}

// shown is the result as the client sees it: a workflow name the
// deployment does not have is the caller's own text, never echoed.
func (s *mcpServer) shown(res *coordinator.Result) *coordinator.Result {
	if !slices.ContainsFunc(s.c.Workflows(), func(w coordinator.WorkflowCard) bool { return w.Name == res.Workflow }) {
		cp := *res
		cp.Workflow = ""
		return &cp
	}
	return res
}

type getRunArgs struct {
	RunID       string `json:"run_id"`
	WaitSeconds *int   `json:"wait_seconds"`
}

func (s *mcpServer) getRun(ctx context.Context, _ *mcp.CallToolRequest, raw json.RawMessage) *mcp.CallToolResult {
	var a getRunArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return toolError(errArguments)
	}
	res, err := s.c.GetRun(ctx, a.RunID, wait(a.WaitSeconds))
	if err != nil {
		return s.fail(contract.ToolGetRun, err)
	}
	return s.answer(contract.ToolGetRun, s.shown(res))
}

type attentionList struct {
	Items []attention.Item `json:"items"`
}

func (s *mcpServer) listAttention(ctx context.Context, _ *mcp.CallToolRequest, _ json.RawMessage) *mcp.CallToolResult {
	items, err := s.c.NeedsAttention(ctx)
	if err != nil {
		return s.fail(contract.ToolListNeedsAttention, err)
	}
	if items == nil {
		items = []attention.Item{}
	}
	return s.answer(contract.ToolListNeedsAttention, attentionList{items})
}

type attentionArgs struct {
	AttentionID string `json:"attention_id"`
	Decision    string `json:"decision"`
}

func (s *mcpServer) getAttention(ctx context.Context, _ *mcp.CallToolRequest, raw json.RawMessage) *mcp.CallToolResult {
	var a attentionArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return toolError(errArguments)
	}
	item, err := s.c.AttentionItem(ctx, a.AttentionID)
	if err != nil {
		return s.fail(contract.ToolGetAttentionItem, err)
	}
	return s.answer(contract.ToolGetAttentionItem, item)
}

type decided struct {
	Item       *attention.Item `json:"attention_item"`
	NextAction string          `json:"next_action"`
}

// Fixed next actions of decide_attention_item, by item state.
var decideNext = map[string]string{
	attention.Open:      "No decision was recorded; the run is still waiting for a person.",
	attention.Approved:  "Approved. Call run_workflow again with the same request_id and the same inputs to continue the run.",
	attention.Rejected:  "Rejected: the run ends without the change. Tell the person nothing was written.",
	attention.Escalated: "Escalated: the run stays stopped for the people it was escalated to. Do not retry.",
	attention.Skipped:   "Skipped. Call run_workflow again with the same request_id and the same inputs to continue the run without that step.",
}

// teachNext is the fixed next action after a teach request: the pause is
// as it was.
const teachNext = "The person's request for a revised package version was recorded for the operator; the run still waits for a decision."

func (s *mcpServer) decide(ctx context.Context, req *mcp.CallToolRequest, raw json.RawMessage) *mcp.CallToolResult {
	var a attentionArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return toolError(errArguments)
	}
	if res := s.decideQuestionTool(ctx, req, a); res != nil {
		return res
	}
	d := attention.Decision{AttentionID: a.AttentionID, Decision: a.Decision, By: ByCallingAgent, Channel: ChannelMCP}
	switch {
	case isAnswer(req):
		st, decision, bad := s.openAnswer(ctx, req, contract.ToolDecide)
		if bad != nil {
			return bad
		}
		if st.AttentionID != a.AttentionID {
			return toolError(errState)
		}
		if decision == nil {
			item, err := s.c.AttentionItem(ctx, a.AttentionID)
			if err != nil {
				return s.fail(contract.ToolDecide, err)
			}
			return s.answer(contract.ToolDecide, decided{item, decideNext[item.State]})
		}
		d.Decision, d.Text, d.By, d.Channel = decision.decision, decision.text, ByElicitation, ChannelElicitation
	case a.Decision == contract.DecisionApprove || a.Decision == contract.DecisionSkip || a.Decision == contract.DecisionTeach:
		// The calling agent cannot approve, skip or teach: only the
		// person can, asked in a form (a teach request's text goes from
		// the person to the coordinator, never through the agent).
		if !elicitationOffered(req) {
			return toolError(errNeedsUser)
		}
		item, err := s.c.AttentionItem(ctx, a.AttentionID)
		if err != nil {
			return s.fail(contract.ToolDecide, err)
		}
		if item.State != attention.Open && (a.Decision != contract.DecisionTeach || item.State != attention.Escalated) {
			return toolError(toolErrorsByCode[blocking.AttentionDecided])
		}
		if a.Decision == contract.DecisionSkip && !item.Skippable {
			return toolError(toolErrorsByCode[blocking.SkipNotDeclared])
		}
		st := approvalState{Tool: contract.ToolDecide, RunID: item.RunID, AttentionID: item.ID, Step: item.Step, Capability: item.Capability, Workflow: item.Workflow, Skippable: item.Skippable}
		if a.Decision == contract.DecisionTeach {
			st.Form = formTeach
		}
		return s.ask(ctx, contract.ToolDecide, st, item)
	}
	item, err := s.c.Decide(ctx, d)
	if err != nil {
		return s.fail(contract.ToolDecide, err)
	}
	if d.Decision == contract.DecisionTeach {
		return s.answer(contract.ToolDecide, decided{item, teachNext})
	}
	return s.answer(contract.ToolDecide, decided{item, decideNext[item.State]})
}

// read serves the read-only tool name, which reads capability.
func (s *mcpServer) read(ctx context.Context, name, capability string, args json.RawMessage) *mcp.CallToolResult {
	rr, err := s.c.Read(ctx, capability, args)
	if err != nil {
		return s.fail(name, err)
	}
	info, ok := rr.Reason.ReadInfo()
	if !ok {
		s.operator("read %s: a reason outside the closed set", capability)
		return toolError(errInternal)
	}
	out := readOut{Capability: capability, Outcome: rr.Outcome, Reason: rr.Reason, WhatHappened: info.WhatHappened, NextAction: info.NextAction}
	if rr.Outcome == contract.OutcomeDone {
		out.Content, out.ServerContent = rr.Content, rr.ServerContent
		if rr.ContentCut {
			out.ContentBound = contentBound
		}
	}
	return s.answer(name, out)
}

// contentBound is the fixed copy of a read whose server's content was
// over the bound.
const contentBound = "The app's answer was longer than " + connector.ContentBound + ", the most a read forwards: server_content holds its first " + connector.ContentBound + ", the rest was left out."

type readOut struct {
	Capability   string           `json:"capability"`
	Outcome      contract.Outcome `json:"outcome"`
	Reason       contract.Reason  `json:"reason"`
	WhatHappened string           `json:"what_happened"`
	NextAction   string           `json:"next_action"`
	Content      json.RawMessage  `json:"content,omitempty"`
	// ServerContent is the app's content blocks as it sent them, for a
	// tool without an output schema (a text answer, most often).
	ServerContent json.RawMessage `json:"server_content,omitempty"`
	// ContentBound is set, to fixed copy naming the bound, when the
	// app's content was cut.
	ContentBound string `json:"content_bound,omitempty"`
}

// ---- elicitation -----------------------------------------------------

// elicitationOffered reports whether the calling client offers form
// elicitation (read per request under 2026-07-28, from initialize
// before).
func elicitationOffered(req *mcp.CallToolRequest) bool {
	caps := req.ClientCapabilities()
	if caps == nil || caps.Elicitation == nil {
		return false
	}
	// Both modes unset means form, for backward compatibility.
	return caps.Elicitation.Form != nil || caps.Elicitation.URL == nil
}

// isAnswer reports whether a call carries input responses or a request
// state: the second round of a multi-round-trip call, or a client making
// one up.
func isAnswer(req *mcp.CallToolRequest) bool {
	return req.Params.RequestState != "" || len(req.Params.InputResponses) > 0
}

// ask answers with the approval form instead of a result. An approval
// form shows the person the exact call the step would send (formCall):
// the form is the elicitation request, shown at the client to the person,
// never a tool result.
func (s *mcpServer) ask(ctx context.Context, tool string, st approvalState, item *attention.Item) *mcp.CallToolResult {
	token, err := s.c.SealState(st, approvalTTL)
	if err != nil {
		return s.fail(tool, err)
	}
	message, form := approvalMessage(item), decisionForm(st.Skippable)
	if st.Form == formTeach {
		message, form = teachMessage(item), teachForm
	} else {
		p, err := s.c.ProposedChange(ctx, item.ID)
		if err != nil {
			return s.fail(tool, err)
		}
		message += formCall(p)
	}
	return &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{approvalInput: &mcp.ElicitParams{
			Mode:            "form",
			Message:         message,
			RequestedSchema: form,
		}},
		RequestState: token,
	}
}

// teachMessage is fixed copy naming the workflow and step of a teach form.
func teachMessage(item *attention.Item) string {
	return fmt.Sprintf("Workflow %q is paused before step %q. Describe how the package should change (at most %d characters, no customer data): your request goes to the host's audit record for the package's publisher. The run stays paused; nothing else happens.", item.Workflow, item.Step, attention.MaxTeachText)
}

// teachForm asks the person for the text of a teach request.
var teachForm = json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{"text":{"type":"string","title":"Request for a revised package","description":"How the package should change, without customer data.","minLength":1,"maxLength":%d}},"required":["text"]}`, attention.MaxTeachText))

// decisionForm is the approval form, offering skip only where the
// package declares the step skippable.
func decisionForm(skippable bool) json.RawMessage {
	if skippable {
		return approvalFormSkip
	}
	return approvalForm
}

// formDecisions are the decisions a decision form offers.
func formDecisions(skippable bool) []string {
	out := []string{contract.DecisionApprove, contract.DecisionReject, contract.DecisionEscalate}
	if skippable {
		out = append(out, contract.DecisionSkip)
	}
	return out
}

// approvalMessage is fixed copy naming the workflow, step and capability:
// identifiers from the package, never a value. It speaks of a change only
// where the capability makes one: a read-only step changes nothing.
func approvalMessage(item *attention.Item) string {
	if item.Risk == ir.ReadOnly {
		return fmt.Sprintf("Workflow %q is paused before step %q, which reads through the read-only capability %q and changes nothing. Approve to let the run read, reject to stop it with nothing written, or escalate to hand it to others. Nothing happens until you decide.", item.Workflow, item.Step, item.Capability)
	}
	return fmt.Sprintf("Workflow %q is paused before step %q, which makes a change through the consequential capability %q. Approve to let the run make this change, reject to stop it with nothing written, or escalate to hand it to others. The host's operator sees the exact change with oa attention show %s. Nothing happens until you decide.", item.Workflow, item.Step, item.Capability, item.ID)
}

var approvalForm = json.RawMessage(`{"type":"object","properties":{"decision":{"type":"string","title":"Decision","description":"approve lets the run go on with this step; reject stops it with nothing written; escalate hands it to others.","enum":["approve","reject","escalate"]}},"required":["decision"]}`)

var approvalFormSkip = json.RawMessage(`{"type":"object","properties":{"decision":{"type":"string","title":"Decision","description":"approve lets the run go on with this step; reject stops it with nothing written; escalate hands it to others; skip lets the run go on without this step (while its guard holds).","enum":["approve","reject","escalate","skip"]}},"required":["decision"]}`)

// answered is a person's answer to an approval round.
type answered struct {
	decision string
	// text is a teach request's text (operator text).
	text string
}

// openAnswer verifies the second round of an approval: a valid state made
// for this tool, and the answer to the form that state says was shown.
// The answer is nil when the person declined or cancelled the form.
func (s *mcpServer) openAnswer(ctx context.Context, req *mcp.CallToolRequest, tool string) (*approvalState, *answered, *mcp.CallToolResult) {
	if req.Params.RequestState == "" {
		// Input responses without a state: never trusted.
		return nil, nil, toolError(errState)
	}
	var st approvalState
	if err := s.c.OpenState(ctx, req.Params.RequestState, &st); err != nil {
		if blocking.Has(err, blocking.RequestStateInvalid) {
			return nil, nil, toolError(errState)
		}
		return nil, nil, s.fail(tool, err)
	}
	if st.Tool != tool {
		return nil, nil, toolError(errState)
	}
	resp, ok := req.Params.InputResponses[approvalInput].(*mcp.ElicitResult)
	if !ok || len(req.Params.InputResponses) != 1 {
		return nil, nil, toolError(errState)
	}
	if resp.Action != "accept" {
		return &st, nil, nil
	}
	if st.Form == formTeach {
		text, _ := resp.Content["text"].(string)
		if len(resp.Content) != 1 || text == "" {
			return nil, nil, toolError(errState)
		}
		return &st, &answered{decision: contract.DecisionTeach, text: text}, nil
	}
	d, _ := resp.Content["decision"].(string)
	if len(resp.Content) == 1 && slices.Contains(formDecisions(st.Skippable), d) {
		return &st, &answered{decision: d}, nil
	}
	return nil, nil, toolError(errState)
}
