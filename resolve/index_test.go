package resolve

import (
	"testing"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/ir"
)

// The indexed ceiling allows exactly what ir.CeilingAllows allows.
func TestCeilingSetIsCeilingAllows(t *testing.T) {
	patterns := [][]string{
		nil,
		{"*"},
		{"records.*"},
		{"records.read"},
		{"records.*", "records.read"},
		{"mail.send", "records.note.*", "records.read"},
		{"records.*", "records.note.*", "rec*"},
		{"records.*", "records.note.append", "records.read", "records.x.*"},
	}
	keys := []string{"", "*", "r", "rec", "records", "records.", "records.*", "records.read", "records.reader", "records.note", "records.note.", "records.note.append", "records.x", "records.x.y", "mail.send", "mail.sendx", "recx"}
	for _, ps := range patterns {
		c := newCeilingSet(ps)
		for _, k := range keys {
			if got, want := c.allows(k), ir.CeilingAllows(ps, k); got != want {
				t.Errorf("patterns %q key %q: allows %v, CeilingAllows %v", ps, k, got, want)
			}
		}
	}
}

// TestServedNameProblems: a plan is refused, located at the capability,
// when two capabilities it serves as tools would share an MCP tool name;
// a capability that is not served (consequential, or needing approval)
// takes no name.
func TestServedNameProblems(t *testing.T) {
	entry := func(key string, risk ir.Risk, approval ir.Approval) Entry {
		return Entry{CapabilityKey: key, Risk: risk, Approval: approval}
	}
	plan := &Plan{Capabilities: []Entry{
		entry("records.a.b_c", ir.ReadOnly, ir.ApprovalNotRequired),
		entry("records.a_b.c", ir.ReadOnly, ir.ApprovalNotRequired),
		entry("records_a.b.c", ir.Consequential, ir.ApprovalNotRequired),
		entry("records.a_b_c", ir.ReadOnly, ir.ApprovalRequired),
	}}
	got := servedNameProblems(plan)
	if len(got) != 1 || got[0].Code != blocking.ToolNameClash || got[0].Path != `capabilities."records.a_b.c"` {
		t.Fatalf("refusals %v, want one tool_name_clash at records.a_b.c", got)
	}
	plan.Capabilities = plan.Capabilities[1:]
	if got := servedNameProblems(plan); got != nil {
		t.Fatalf("refusals %v, want none", got)
	}
}
