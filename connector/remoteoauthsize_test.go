package connector_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/remote"
	"github.com/oa-dev/oa/internal/tokenstore"
	"github.com/oa-dev/oa/testkit/oauthtest"
)

// TestOAuthTokenAnswerTooLarge: a real authorization server whose token
// endpoint answers 8 MiB is oauth_answer_too_large — it answered, so
// neither oauth_server_unreachable ("did not answer", safe to retry) nor
// a failed login — for a client-credentials token and for a person's
// login; nothing reaches the MCP server and nothing is stored.
func TestOAuthTokenAnswerTooLarge(t *testing.T) {
	srv := oauthtest.Start(t, oauthtest.Options{TokenAnswerBytes: 8 << 20})
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte(oauthtest.MachineSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := remoteConfig(remote.Config{URL: srv.MCPURL, OAuth: &remote.OAuth{ClientID: oauthtest.MachineClient, ClientSecretFile: secret}})
	opts := connector.Options{Tokens: tokenstore.For(dir, "machine"), Timeout: 30 * time.Second}
	_, err := connector.Describe(context.Background(), cfg, opts)
	wantCode(t, err, blocking.OAuthAnswerTooLarge)
	if blocking.Has(err, blocking.OAuthServerUnreachable) {
		t.Fatalf("an answer too large is said to be no answer: %v", err)
	}

	cfg, opts = oauthConn(t, srv)
	err = connector.Login(context.Background(), cfg, remote.LoginOptions{Tokens: opts.Tokens, Show: follow(t), Wait: time.Minute})
	wantCode(t, err, blocking.OAuthAnswerTooLarge)
	if _, err := opts.Tokens.Get(); !errors.Is(err, tokenstore.ErrNone) {
		t.Fatalf("a login whose token answer was too large stored something: %v", err)
	}
	if n := len(srv.AccessTokens()); n != 0 {
		t.Fatalf("%d requests reached the MCP server", n)
	}
}
