package coordinator_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/oa-dev/oa/connection"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/remote"
	"github.com/oa-dev/oa/connector/sandbox"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/hosttest"
	"github.com/oa-dev/oa/testkit/oauthtest"
	"github.com/oa-dev/oa/testkit/servetest"
)

// TestOAuthGovernedRead: the sandbox records server behind OAuth (a real
// authorization server, the go-sdk bearer middleware) is added with
// --oauth, logged in, verified, bound and read through the coordinator,
// which takes the token from the host's token store; once the tokens are
// revoked, the read is did_not_run (app_credentials_refused), with no
// retry, and no token reaches the result, its content or the operator.
func TestOAuthGovernedRead(t *testing.T) {
	srv := oauthtest.Start(t, oauthtest.Options{Server: sandbox.NewServer("")})
	h := hosttest.New(t, nil)
	host := h.Open()
	ctx := context.Background()
	cfg := connector.Config{Remote: &remote.Config{URL: srv.MCPURL, OAuth: &remote.OAuth{ClientID: oauthtest.PublicClient}}}
	if _, err := connection.Add(ctx, host, connection.AddOptions{Name: "records", Connector: resolve.SandboxConnector, Config: cfg, Replace: true}, h.Change()); err != nil {
		t.Fatal(err)
	}
	show := func(u string) {
		resp, err := http.Get(u)
		if err != nil {
			t.Error(err)
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if err := connection.Login(ctx, host, "records", remote.LoginOptions{Show: show, Wait: time.Minute}, h.Change()); err != nil {
		t.Fatal(err)
	}
	if _, err := connection.Verify(ctx, host, "records", connector.Options{}, h.Change()); err != nil {
		t.Fatal(err)
	}
	h.WriteRegistry(resolve.StarterRegistry(hosttest.Name))
	h.Bind(host, "claude-test")

	var operator servetest.Buffer
	c, err := coordinator.Open(ctx, coordinator.Options{Home: h.Home, Deployment: "clinic", Operator: &operator, EffectTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := c.Read(ctx, "records.read", json.RawMessage(`{"record":"CL-0001"}`))
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if res.Outcome != contract.OutcomeDone {
		t.Fatalf("read: outcome %s (reason %s), want %s", res.Outcome, res.Reason, contract.OutcomeDone)
	}
	if res.Reason != contract.ReasonRead {
		t.Fatalf("read: reason %s, want %s", res.Reason, contract.ReasonRead)
	}
	srv.Revoke()
	sent := len(srv.AccessTokens())
	res, err = c.Read(ctx, "records.read", json.RawMessage(`{"record":"CL-0001"}`))
	if err != nil {
		t.Fatalf("read after revocation: %v", err)
	}
	if res.Outcome != contract.OutcomeDidNotRun {
		t.Fatalf("read after revocation: outcome %s (reason %s), want %s", res.Outcome, res.Reason, contract.OutcomeDidNotRun)
	}
	if res.Reason != contract.ReasonAppCredentials {
		t.Fatalf("read after revocation: reason %s, want %s", res.Reason, contract.ReasonAppCredentials)
	}
	if n := len(srv.AccessTokens()) - sent; n > 1 {
		t.Fatalf("the revoked token was sent %d times", n)
	}
	b, _ := json.Marshal(res)
	for _, tok := range append(srv.AccessTokens(), srv.RefreshTokens()...) {
		if strings.Contains(string(b), tok) {
			t.Fatal("a token reached the result")
		}
		if strings.Contains(operator.String(), tok) {
			t.Fatal("a token reached the operator")
		}
	}
}
