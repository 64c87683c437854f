package contract

import (
	"reflect"
	"strings"
	"testing"
)

// TestAgentVisibleNamesAreSnakeCase holds the contract's JSON to the
// casing of the MCP face it feeds: every name an agent may see is
// snake_case (safe_to_retry, never safeToRetry).
func TestAgentVisibleNamesAreSnakeCase(t *testing.T) {
	for _, v := range []any{OutcomeInfo{}, ReasonInfo{}} {
		typ := reflect.TypeOf(v)
		for i := range typ.NumField() {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			if !nameRule.MatchString(name) {
				t.Errorf("%s.%s is %q in JSON, not snake_case", typ.Name(), typ.Field(i).Name, name)
			}
		}
	}
}
