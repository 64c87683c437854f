package coordinator

import (
	"context"
	"encoding/json"
	"time"

	"github.com/oa-dev/oa/coordinator/attention"
)

// The exported methods of a Coordinator that its parts implement. The
// parts are named fields, not embedded (coordinator.go), so each is
// forwarded here by hand: the exported face stays what it was, and code
// in this package names the part it calls.

// Run runs (or replays) the workflow for one request (engine.Run).
func (c *Coordinator) Run(ctx context.Context, req RunRequest) (*Result, error) {
	return c.engine.Run(ctx, req)
}

// GetRun reads a run's result, waiting up to wait while it runs here (engine.GetRun).
func (c *Coordinator) GetRun(ctx context.Context, runID string, wait time.Duration) (*Result, error) {
	return c.engine.GetRun(ctx, runID, wait)
}

// Read serves a read-only capability tool (engine.Read).
func (c *Coordinator) Read(ctx context.Context, capability string, args json.RawMessage) (*ReadResult, error) {
	return c.engine.Read(ctx, capability, args)
}

// PlanDigest is the digest of the bound plan served (boundSession.PlanDigest).
func (c *Coordinator) PlanDigest() string { return c.bound.PlanDigest() }

// ToolNames lists every tool the MCP server serves (boundSession.ToolNames).
func (c *Coordinator) ToolNames() []string { return c.bound.ToolNames() }

// ReadTools are the read-only capability tools served (boundSession.ReadTools).
func (c *Coordinator) ReadTools() []ReadTool { return c.bound.ReadTools() }

// Workflows lists the package's jobs (boundSession.Workflows).
func (c *Coordinator) Workflows() []WorkflowCard { return c.bound.Workflows() }

// ConnectionOf names the connection a capability is bound to (boundSession.ConnectionOf).
func (c *Coordinator) ConnectionOf(capability string) string { return c.bound.ConnectionOf(capability) }

// NeedsAttention lists this deployment's open attention items (desk.NeedsAttention).
func (c *Coordinator) NeedsAttention(ctx context.Context) ([]attention.Item, error) {
	return c.desk.NeedsAttention(ctx)
}

// AttentionItem returns one of this deployment's attention items (desk.AttentionItem).
func (c *Coordinator) AttentionItem(ctx context.Context, id string) (*attention.Item, error) {
	return c.desk.AttentionItem(ctx, id)
}

// Decide records a person's decision on one of this deployment's items (desk.Decide).
func (c *Coordinator) Decide(ctx context.Context, d attention.Decision) (*attention.Item, error) {
	return c.desk.Decide(ctx, d)
}

// ProposedChange opens the change an attention item proposes, for the person deciding only (desk.ProposedChange).
func (c *Coordinator) ProposedChange(ctx context.Context, attentionID string) (*attention.ProposedChange, error) {
	return c.desk.ProposedChange(ctx, attentionID)
}

// AnswerQuestion hands a person's answer to the app waiting in this process (desk.AnswerQuestion).
func (c *Coordinator) AnswerQuestion(ctx context.Context, id string, a attention.Answer, by, channel string) (*attention.Item, error) {
	return c.desk.AnswerQuestion(ctx, id, a, by, channel)
}

// WaitingQuestion is the app's question of attention item id waiting here, else nil (desk.WaitingQuestion).
func (c *Coordinator) WaitingQuestion(id string) *Question { return c.desk.WaitingQuestion(id) }
