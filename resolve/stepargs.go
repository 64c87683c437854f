package resolve

import (
	"encoding/json"
	"strconv"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/component"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/ir"
)

// inputSchema is the part of a tool's JSON Schema inputSchema the step
// check reads.
type inputSchema struct {
	Properties           map[string]json.RawMessage `json:"properties"`
	Required             []string                   `json:"required"`
	AdditionalProperties *bool                      `json:"additionalProperties"`
}

// propertyType is a property's type keyword: one name or a list.
type propertyType struct {
	Type json.RawMessage `json:"type"`
}

// stepArgumentProblems checks each step's arguments, as its evaluator
// builds them from the job's typed inputs, against the input schema of
// the tool the plan performs the step's capability with: a field the tool
// requires and the arguments never yield, a field the tool does not take
// (its schema closes additional properties), a field whose type the
// schema does not allow. Each refusal (step_arguments_invalid) names the
// job, the step, the field and the tool, located at jobs.J.steps[i]. It
// found them only when the server refused the call at run time
// (connector_arguments_invalid, no field named).
func stepArgumentProblems(st *State, plan *Plan) blocking.List {
	tools := map[string]connector.Tool{}
	for _, e := range plan.Capabilities {
		for _, l := range st.Connections {
			if l.Record != nil && l.Name == e.ConnectionID && l.Record.Verification != nil {
				if t, ok := l.Record.Verification.Inventory.Tool(e.RuntimeTool); ok {
					tools[e.CapabilityKey] = t
				}
			}
		}
	}
	var checker *component.Checker
	var refused blocking.List
	for _, use := range component.Uses(st.Worker) {
		if use.Kind != ir.EvaluatorArguments {
			continue
		}
		job, _ := st.Worker.Job(use.Job)
		step := job.Steps[use.Step]
		tool, ok := tools[step.Capability]
		if !ok {
			continue
		}
		var schema inputSchema
		if json.Unmarshal(tool.InputSchema, &schema) != nil {
			continue
		}
		ev, ok := st.Worker.Evaluator(use.Evaluator)
		if !ok {
			continue
		}
		if checker == nil {
			checker = component.NewChecker(cuecontext.New())
		}
		fields, open, err := checker.ArgumentFields(ev.Source, use.Scope)
		if err != nil {
			continue // the compiler's check, made at admission, reports it
		}
		where := "jobs." + use.Job + ".steps[" + strconv.Itoa(use.Step) + "]"
		bad := func(field, format string, args ...any) {
			args = append([]any{use.Job, step.ID, field}, args...)
			refused = append(refused, blocking.New(blocking.StepArgumentsInvalid, "job %s step %s: field %s "+format, args...).At("", where+".args."+field))
		}
		yields := map[string]bool{}
		for _, f := range fields {
			if !f.Optional {
				yields[f.Name] = true
			}
			prop, known := schema.Properties[f.Name]
			if !known {
				if schema.AdditionalProperties != nil && !*schema.AdditionalProperties {
					bad(f.Name, "is not an argument tool %s takes", tool.Name)
				}
				continue
			}
			if want := schemaTypes(prop); len(want) > 0 && !kindAllowed(f.Kind, want) {
				bad(f.Name, "is not of a type tool %s allows for it (%v)", tool.Name, want)
			}
		}
		if open {
			continue
		}
		for _, name := range schema.Required {
			if !yields[name] {
				bad(name, "is required by tool %s and its arguments (%s) do not give it", tool.Name, use.Evaluator)
			}
		}
	}
	return refused
}

// schemaTypes are the JSON types a property's schema allows (nil: any).
func schemaTypes(prop json.RawMessage) []string {
	var p propertyType
	if json.Unmarshal(prop, &p) != nil || len(p.Type) == 0 {
		return nil
	}
	var one string
	if json.Unmarshal(p.Type, &one) == nil {
		return []string{one}
	}
	var many []string
	if json.Unmarshal(p.Type, &many) == nil {
		return many
	}
	return nil
}

// kindAllowed reports whether a value of CUE kind k may be of one of the
// JSON types: a field that may be of several kinds is held only to what it
// surely is.
func kindAllowed(k cue.Kind, types []string) bool {
	var allowed cue.Kind
	for _, t := range types {
		switch t {
		case "string":
			allowed |= cue.StringKind
		case "integer":
			allowed |= cue.IntKind
		case "number":
			allowed |= cue.NumberKind
		case "boolean":
			allowed |= cue.BoolKind
		case "object":
			allowed |= cue.StructKind
		case "array":
			allowed |= cue.ListKind
		case "null":
			allowed |= cue.NullKind
		default:
			return true
		}
	}
	return k&allowed != 0 || k == cue.BottomKind
}
