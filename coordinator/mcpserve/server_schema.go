package mcpserve

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/coordinator/attention"
	"github.com/oa-dev/oa/ir"
)

// The coordinator tools' JSON Schemas, written out here rather than
// inferred from Go types: they are the contract a calling agent codes
// against, so they must not move with the SDK. Every object is closed
// (additionalProperties false). The enums are built from the closed tables
// of package contract (Outcomes, Reasons, ProofValues,
// RecordChangedValues), so a result schema lists exactly the values a
// result can carry.

// obj is a closed object schema.
func obj(props map[string]any, required ...string) map[string]any {
	if required == nil {
		required = []string{}
	}
	return map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false}
}

func str(description string) map[string]any {
	return map[string]any{"type": "string", "description": description}
}

func enum[T ~string](description string, values []T) map[string]any {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = string(v)
	}
	return map[string]any{"type": "string", "description": description, "enum": out}
}

func outcomeValues() []contract.Outcome {
	out := make([]contract.Outcome, len(contract.Outcomes))
	for i, o := range contract.Outcomes {
		out[i] = o.Outcome
	}
	return out
}

func reasonValues() []contract.Reason {
	out := make([]contract.Reason, len(contract.Reasons))
	for i, r := range contract.Reasons {
		out[i] = r.Reason
	}
	return out
}

const (
	digestPattern  = `^sha256:[0-9a-f]{64}$`
	waitSecondsDoc = "How long to wait for a terminal outcome before answering running (seconds, default %d, at most %d)."
)

func waitSeconds() map[string]any {
	return map[string]any{"type": "integer", "minimum": 0, "maximum": contract.WaitSecondsMax, "default": contract.WaitSecondsDefault,
		"description": fmt.Sprintf(waitSecondsDoc, contract.WaitSecondsDefault, contract.WaitSecondsMax)}
}

func idString(description string) map[string]any {
	return map[string]any{"type": "string", "pattern": contract.IDPattern, "description": description}
}

// resultSchema is the output schema of run_workflow and get_run: the
// result contract. Beyond the enums, oneOf ties each closed reason to its
// outcome, record_changed, safe_to_retry and fixed copy.
func resultSchema() map[string]any {
	s := obj(map[string]any{
		"run_id":         str("The run's id; pass it to get_run."),
		"request_id":     str("The caller's request_id, as given."),
		"workflow":       str("The workflow run; empty when the name given is not one of this deployment's workflows."),
		"outcome":        enum("One of the four terminal outcomes, or running.", outcomeValues()),
		"reason":         enum("The closed reason; it fixes the outcome and the copy.", reasonValues()),
		"safe_to_retry":  map[string]any{"type": "boolean", "description": "Whether retrying with the same request_id can succeed without risk."},
		"record_changed": enum("Whether the record was changed.", contract.RecordChangedValues),
		"proof":          enum("What backs the result: sealed (a signed, chained receipt), local (the coordinator's durable record), simulated (the sandbox connector), none.", contract.ProofValues),
		"what_happened":  str("Fixed copy: what happened."),
		"next_action":    str("Fixed copy: what to do next."),
		"replayed":       map[string]any{"type": "boolean", "description": "True when this request_id was answered before and this is the same result again."},
		"attempt":        map[string]any{"type": "integer", "minimum": 0, "description": "Which attempt of the request this is."},
		"evidence":       map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "The required evidence that held."},
		"attention_id":   idString("The attention item waiting for a person, when the run is paused."),
		"receipt_digest": map[string]any{"type": "string", "pattern": digestPattern, "description": "The digest of the run's signed receipt."},
	}, "run_id", "request_id", "workflow", "outcome", "reason", "safe_to_retry", "record_changed", "proof", "what_happened", "next_action", "replayed", "attempt", "evidence")
	branches := make([]any, len(contract.Reasons))
	for i, r := range contract.Reasons {
		branches[i] = map[string]any{"properties": map[string]any{
			"reason":         map[string]any{"const": string(r.Reason)},
			"outcome":        map[string]any{"const": string(r.Outcome)},
			"record_changed": map[string]any{"const": r.RecordChanged},
			"safe_to_retry":  map[string]any{"const": r.SafeToRetry},
			"what_happened":  map[string]any{"const": r.WhatHappened},
			"next_action":    map[string]any{"const": r.NextAction},
		}}
	}
	s["oneOf"] = branches
	return s
}

func workflowsSchema() map[string]any {
	property := obj(map[string]any{
		"type":        map[string]any{"type": "string", "enum": []string{"string", "integer", "number", "boolean"}},
		"description": map[string]any{"type": "string"},
		"pattern":     map[string]any{"type": "string"},
		"maxLength":   map[string]any{"type": "integer"},
		"enum":        map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
		"minimum":     map[string]any{"type": "number"},
		"maximum":     map[string]any{"type": "number"},
	}, "type", "description")
	inputSchema := obj(map[string]any{
		"type":                 map[string]any{"const": "object"},
		"properties":           map[string]any{"type": "object", "additionalProperties": property},
		"required":             map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
		"additionalProperties": map[string]any{"const": false},
	}, "type", "properties", "required", "additionalProperties")
	inputSchema["description"] = "The JSON Schema run_workflow's inputs must match."
	card := obj(map[string]any{
		"name":              str("The workflow's name; pass it to run_workflow."),
		"purpose":           str("What the workflow is for."),
		"done_means":        str("What done means for this workflow."),
		"input_schema":      inputSchema,
		"effects":           map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "The consequential capabilities the workflow may use."},
		"approval_required": map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "boolean"}, "description": "Per consequential capability, whether a person must approve it first."},
	}, "name", "purpose", "done_means", "input_schema", "effects", "approval_required")
	return obj(map[string]any{
		"deployment": str("The deployment served."),
		"mode":       map[string]any{"type": "string", "enum": []any{coordinator.ModeDeployment, coordinator.ModeSandbox}, "description": "deployment: a bound deployment on this host; sandbox: the built-in demo package on the sandbox connector, whose records are not real."},
		"workflows":  map[string]any{"type": "array", "items": card},
	}, "deployment", "mode", "workflows")
}

func attentionSchema() map[string]any {
	states := []string{attention.Open, attention.Approved, attention.Rejected, attention.Escalated, attention.Skipped, attention.Answered, attention.Closed, attention.Lapsed}
	dateTime := func(d string) map[string]any {
		return map[string]any{"type": "string", "format": "date-time", "description": d}
	}
	return obj(map[string]any{
		"attention_id":   idString("The item's id."),
		"run_id":         str("The paused run."),
		"workflow":       str("The run's workflow."),
		"step":           str("The step waiting for a decision."),
		"capability":     str("The capability the step uses."),
		"risk":           enum("The capability's risk.", []ir.Risk{ir.ReadOnly, ir.Consequential}),
		"state":          enum("open until a person decides.", states),
		"question":       str("Fixed copy: the decision asked for."),
		"decided_by":     str("Who decided."),
		"channel":        str("How the decision was made."),
		"created_at":     dateTime("When the run paused."),
		"decided_at":     dateTime("When it was decided."),
		"outcome":        enum("The run's outcome.", outcomeValues()),
		"kind":           enum("downstream_question for a question the app asked during a change; absent for an approval.", []string{attention.KindDownstreamQuestion}),
		"connection":     str("The connection whose app asked (a question)."),
		"message_digest": str("Digest of the app's question; its text is never stored."),
		"schema_digest":  str("Digest of the form the app asked for."),
		"answer_action":  enum("How the person answered the app.", []string{"accept", "decline", "cancel"}),
		"answer_digest":  str("Digest of the person's answer; its content is never stored."),
		"skippable":      map[string]any{"type": "boolean", "description": "The package lets a person skip this step (while its guard holds)."},
		"teach_requests": map[string]any{"type": "integer", "minimum": 0, "description": "How many requests for a revised package version people attached to this item; their text is for the operator only."},
	}, "attention_id", "run_id", "workflow", "step", "capability", "risk", "state", "question", "created_at", "outcome")
}

// readResultSchema wraps a read-only capability's downstream output schema.
func readResultSchema(capability string, content json.RawMessage) (map[string]any, error) {
	var inner any = map[string]any{"type": "object"}
	if len(content) > 0 {
		var m map[string]any
		if err := json.Unmarshal(content, &m); err != nil {
			return nil, err
		}
		delete(m, "$schema")
		delete(m, "$id")
		inner = m
	}
	return obj(map[string]any{
		"capability":    map[string]any{"const": capability, "description": "The capability read."},
		"outcome":       enum("done when the read answered; did_not_run otherwise.", outcomeValues()),
		"reason":        enum("The closed reason.", reasonValues()),
		"what_happened": str("Fixed copy: what happened."),
		"next_action":   str("Fixed copy: what to do next."),
		"content":       inner,
		"server_content": map[string]any{"type": "array", "items": map[string]any{"type": "object", "required": []string{"type"}, "properties": map[string]any{"type": enum("The block's kind, as MCP defines it.", []string{"text", "image", "audio", "resource_link", "resource"})}},
			"description": "The app's content blocks as it sent them (text, image, audio, resource_link, resource), when its tool declares no output schema; at most " + connector.ContentBound + " in all."},
		"content_bound": str("Fixed copy, present only when the app's content was over the bound: names the bound."),
	}, "capability", "outcome", "reason", "what_happened", "next_action"), nil
}

// toolSchemas are one tool's input and output schemas, as listed and as
// resolved for checking.
type toolSchemas struct {
	in, out       json.RawMessage
	inRes, outRes *lazySchema
}

// lazySchema is a schema resolved on its first use. Resolving every
// tool's schemas (jsonschema's decoding and Resolve) took about 40 % of a
// session start's CPU, for tools a session may never call; that every
// schema resolves is proven by TestToolSchemasResolve instead.
type lazySchema struct {
	raw  json.RawMessage
	once sync.Once
	res  *jsonschema.Resolved
	err  error
}

// resolved is the schema resolved, or the error resolving it.
func (l *lazySchema) resolved() (*jsonschema.Resolved, error) {
	l.once.Do(func() {
		var s jsonschema.Schema
		if l.err = json.Unmarshal(l.raw, &s); l.err == nil {
			l.res, l.err = s.Resolve(nil)
		}
	})
	return l.res, l.err
}

func newToolSchemas(in, out any) (toolSchemas, error) {
	var ts toolSchemas
	var err error
	if ts.in, ts.inRes, err = schemaJSON(in); err != nil {
		return ts, fmt.Errorf("input schema: %w", err)
	}
	if ts.out, ts.outRes, err = schemaJSON(out); err != nil {
		return ts, fmt.Errorf("output schema: %w", err)
	}
	return ts, nil
}

// schemaJSON encodes a schema and prepares its resolution.
func schemaJSON(v any) (json.RawMessage, *lazySchema, error) {
	b, ok := v.(json.RawMessage)
	if !ok {
		var err error
		if b, err = json.Marshal(v); err != nil {
			return nil, nil, err
		}
	}
	return b, &lazySchema{raw: b}, nil
}

// conformsTo reports whether the JSON document doc satisfies the schema
// (a schema that does not resolve satisfies nothing). The validation
// error is dropped: its text quotes the offending value.
func conformsTo(schema *lazySchema, doc []byte) bool {
	rs, err := schema.resolved()
	if err != nil {
		return false
	}
	var v any
	if len(doc) == 0 {
		doc = []byte("{}")
	}
	if json.Unmarshal(doc, &v) != nil {
		return false
	}
	return rs.Validate(v) == nil
}

// emptyInput is the input schema of a tool without arguments.
func emptyInput() map[string]any { return obj(map[string]any{}) }

// decisionValues are the decisions as a schema enum, in harness order.
func decisionValues() []string { return slices.Clone(contract.Decisions) }
