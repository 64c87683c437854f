package connection_test

import (
	"context"
	"testing"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connection"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// TestVerifyRecordsTheLastErrorCode: a verification that fails records
// its refusal code on the connection (shown by oa connection show and the
// console), a closed code and never the server's text; the next one that
// succeeds clears it.
func TestVerifyRecordsTheLastErrorCode(t *testing.T) {
	ctx := context.Background()
	h := hosttest.New(t, nil)
	opened := h.Open()
	if _, err := connection.Add(ctx, opened, connection.AddOptions{Name: "records", Connector: resolve.SandboxConnector, Config: connector.Config{Command: "/nonexistent/server"}, Replace: true}, h.Change()); err != nil {
		t.Fatal(err)
	}
	if _, err := connection.Verify(ctx, opened, "records", connector.Options{}, h.Change()); err == nil {
		t.Fatal("a server that cannot start was verified")
	}
	rec, err := connection.Get(ctx, opened, "records")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Online || rec.LastError != blocking.ConnectorStartFailed {
		t.Fatalf("after a failed verify: online %v, last error %q; want %s", rec.Online, rec.LastError, blocking.ConnectorStartFailed)
	}
	if v := connection.ViewOf("records", rec); v.LastError != blocking.ConnectorStartFailed {
		t.Fatalf("the view's last error %q", v.LastError)
	}
	h.AddConnection(opened, "records", resolve.SandboxConnector, connector.Config{Command: connector.SandboxCommand})
	if _, err := connection.Verify(ctx, opened, "records", connector.Options{}, h.Change()); err != nil {
		t.Fatal(err)
	}
	if rec, err = connection.Get(ctx, opened, "records"); err != nil || rec.LastError != "" || !rec.Online {
		t.Fatalf("after a verify that worked: %v, online %v, last error %q", err, rec.Online, rec.LastError)
	}
}
