package mcpserve_test

import (
	"context"
	"strings"
	"testing"

	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/hosttest"
	"github.com/oa-dev/oa/testkit/servetest"
)

// TestReadOnlyApprovalAsksNoChange: a read-only step that needs a
// person's approval is asked about as the read it is — its form and its
// item's question never ask to "make this change" — while the
// consequential step after it is asked about as a change.
func TestReadOnlyApprovalAsksNoChange(t *testing.T) {
	if testing.Short() {
		t.Skip("builds oa and runs it as a subprocess")
	}
	h := &servetest.Host{Host: hosttest.New(t, nil), OA: servetest.Binary(t)}
	h.WriteRegistry(strings.Replace(servetest.ReadApprovalRegistry(), `description: "Append one note to a record."`, `description: "Append one note to a record."`+"\n\t\tapproval:    \"required\"", 1))
	opened := h.Open()
	h.AddConnection(opened, "sandbox", resolve.SandboxConnector, hosttest.Sandbox)
	h.Bind(opened, "claude-test")

	person := h.Connect(t, servetest.ClientOptions{Answer: personAnswers(contract.DecisionApprove, "")})
	want(t, "approved read and change", person.Run("req-read", triage("AB-1234", "A note.")), contract.OutcomeDone, contract.ReasonVerified)
	asked := person.Asked()
	if len(asked) != 3 {
		t.Fatalf("the person was asked %d times, want 3 (read, change, read back): %q", len(asked), asked)
	}
	for i, msg := range asked {
		change := strings.Contains(msg, "step \"append_note\"")
		switch {
		case change && (!strings.Contains(msg, "make this change") || !strings.Contains(msg, "oa attention show att_")):
			t.Errorf("form %d, before the change, does not ask about it: %q", i, msg)
		case !change && (strings.Contains(msg, "change this") || strings.Contains(msg, "make this change") || strings.Contains(msg, "consequential") || !strings.Contains(msg, "changes nothing")):
			t.Errorf("form %d, before a read, asks about a change: %q", i, msg)
		}
	}
	items, err := coordinator.AttentionRecords(h.Open()).List(context.Background(), true)
	if err != nil || len(items) != 3 {
		t.Fatalf("items: %+v, %v", items, err)
	}
	for _, it := range items {
		if read := it.Step != "append_note"; read == strings.Contains(it.Question, "makes a change") || read != strings.Contains(it.Question, "changes nothing") {
			t.Errorf("item of step %s asks %q", it.Step, it.Question)
		}
	}
}
