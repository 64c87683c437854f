package connector

import (
	"encoding/json"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
)

// checker holds a tool's schemas resolved for validation.
type checker struct {
	input, output *jsonschema.Resolved
}

// resolveSchema prepares canonical schema JSON for validation. A schema
// jsonschema-go cannot resolve (not draft-07 or 2020-12, a remote $ref) is
// refused at listing time: oa checks every argument and result it passes,
// so a schema it cannot check is a schema it cannot honour.
func resolveSchema(b json.RawMessage) (*jsonschema.Resolved, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, ruleError("not a JSON Schema")
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil, ruleError("not a self-contained JSON Schema (draft-07 or 2020-12)")
	}
	return rs, nil
}

// resolved remembers each tool's resolved schemas by the tool's digest,
// which covers both schemas: the coordinator lists tools before every
// call, and resolving the same schemas each time was most of that cost.
// Resolved schemas are only read after this, by any number of callers.
var resolved struct {
	sync.Mutex
	byDigest map[string]checker
}

// maxResolved bounds the memo; past it, it starts again empty.
const maxResolved = 4096

// newChecker resolves t's schemas (t.Digest must be set).
func newChecker(t Tool) (checker, error) {
	resolved.Lock()
	c, ok := resolved.byDigest[t.Digest]
	resolved.Unlock()
	if ok {
		return c, nil
	}
	c, err := resolveChecker(t)
	if err != nil {
		return checker{}, err
	}
	resolved.Lock()
	if resolved.byDigest == nil || len(resolved.byDigest) >= maxResolved {
		resolved.byDigest = map[string]checker{}
	}
	resolved.byDigest[t.Digest] = c
	resolved.Unlock()
	return c, nil
}

func resolveChecker(t Tool) (checker, error) {
	in, err := resolveSchema(t.InputSchema)
	if err != nil {
		return checker{}, err
	}
	c := checker{input: in}
	if len(t.OutputSchema) > 0 {
		if c.output, err = resolveSchema(t.OutputSchema); err != nil {
			return checker{}, err
		}
	}
	return c, nil
}

// conforms reports whether the JSON document doc satisfies rs. Validation
// errors are dropped, not returned: their text quotes the offending value.
func conforms(rs *jsonschema.Resolved, doc []byte) bool {
	var v any
	if json.Unmarshal(doc, &v) != nil {
		return false
	}
	return rs.Validate(v) == nil
}
