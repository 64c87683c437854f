package coordinator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connection"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/internal/hosttest"
	"github.com/oa-dev/oa/internal/interoptest"
)

// everythingRegistry maps the clinic's capabilities to tools of the stock
// server-everything: its structured weather read for records.read, its
// elicitation trigger for records.note.append; every other tool it lists
// is registered disabled, so the connection exposes nothing beyond the
// package's ceiling.
func everythingRegistry(host string, inv connector.Inventory) string {
	var others strings.Builder
	for _, tool := range inv.Tools {
		if tool.Name != "get-structured-content" && tool.Name != "trigger-elicitation-request" {
			fmt.Fprintf(&others, "\t{name: %q, connector: \"everything\", capability: \"records.read\", risk: \"read_only\", enabled: false},\n", tool.Name)
		}
	}
	return fmt.Sprintf(`package host

host: %q
capabilities: {
	"records.read": {risk: "read_only", description: "Read one record."}
	"records.note.append": {risk: "consequential", description: "Append one note."}
}
connectors: {
	"everything": {aliases: [], availability: "available"}
}
tools: [
	{name: "get-structured-content", connector: "everything", capability: "records.read", risk: "read_only", enabled: true},
	{name: "trigger-elicitation-request", connector: "everything", capability: "records.note.append", risk: "consequential", enabled: true},
%s]
`, host, others.String())
}

// TestRemoteServerEverything: the stock server-everything, run in
// streamableHttp mode on loopback, is added as a remote connection,
// verified (inventory and protocol recorded), bound, and read through the
// coordinator under the plan check; once it stops, verification is a
// named refusal and a read is did_not_run (app_offline).
func TestRemoteServerEverything(t *testing.T) {
	srv := interoptest.StartEverything(t)
	h := hosttest.New(t, nil)
	host := h.Open()
	ctx := context.Background()
	if _, err := connection.Add(ctx, host, connection.AddOptions{Name: "everything", Connector: "everything", Config: connector.Config{Remote: &connector.Remote{URL: srv.URL}}}, h.Change()); err != nil {
		t.Fatal(err)
	}
	rec, err := connection.Verify(ctx, host, "everything", connector.Options{}, h.Change())
	if err != nil {
		t.Fatal(err)
	}
	if !rec.Verified() || rec.Verification.Protocol == "" || rec.Config.Remote.Auth != connector.AuthNone {
		t.Fatalf("verification: %+v", rec.Verification)
	}
	if _, ok := rec.Verification.Inventory.Tool("trigger-elicitation-request"); !ok {
		t.Fatal("the elicitation tool is not listed: the downstream client does not offer elicitation")
	}
	h.WriteRegistry(everythingRegistry(hosttest.Name, rec.Verification.Inventory))
	h.Bind(host, "claude-test")

	var operator lockedBuffer
	c, err := coordinator.Open(ctx, coordinator.Options{Home: h.Home, Deployment: "clinic", Operator: &operator, EffectTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := c.Read(ctx, "records.read", json.RawMessage(`{"location":"Chicago"}`))
	if err != nil || res.Outcome != contract.OutcomeDone || res.Reason != contract.ReasonRead {
		t.Fatalf("read: %v %+v", err, res)
	}
	var weather struct {
		Temperature *float64 `json:"temperature"`
	}
	if err := json.Unmarshal(res.Content, &weather); err != nil || weather.Temperature == nil {
		t.Fatalf("read content: %s", res.Content)
	}

	srv.Stop()
	res, err = c.Read(ctx, "records.read", json.RawMessage(`{"location":"Chicago"}`))
	if err != nil || res.Outcome != contract.OutcomeDidNotRun {
		t.Fatalf("read of a stopped server: %v %+v", err, res)
	}
	_, err = connection.Verify(ctx, host, "everything", connector.Options{}, h.Change())
	if c := hosttest.Codes(t, err); !slices.Contains(c, blocking.RemoteUnreachable) || !slices.Contains(c, blocking.ConnectionVerifyFailed) {
		t.Fatalf("verify of a stopped server: %v", c)
	}
}

// lockedBuffer is an operator channel safe to write from several
// goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
