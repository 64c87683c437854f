package connection

import (
	"context"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/remote"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/internal/tokenstore"
)

// Login runs the OAuth authorization-code login of connection name for the
// person c.By and stores its tokens sealed under the host's token key
// ($OA_HOME/oauth). The connection's record does not change: the login is
// a credential, not configuration, so the revision and the plan stay.
func Login(ctx context.Context, h *host.Host, name string, opts remote.LoginOptions, c Change) error {
	if err := c.check(); err != nil {
		return err
	}
	rec, err := Get(ctx, h, name)
	if err != nil {
		return err
	}
	if err := oauthLogin(rec); err != nil {
		return err
	}
	opts.Tokens = tokenstore.For(h.Home, name)
	return connector.Login(ctx, rec.Config, opts)
}

// Logout removes connection name's stored OAuth login, revoking its
// refresh token at the authorization server where it can. The
// connection's requests are then refused remote_login_required until
// someone logs in again.
func Logout(ctx context.Context, h *host.Host, name string, c Change) (remote.LogoutResult, error) {
	if err := c.check(); err != nil {
		return remote.LogoutResult{}, err
	}
	rec, err := Get(ctx, h, name)
	if err != nil {
		return remote.LogoutResult{}, err
	}
	if err := oauthLogin(rec); err != nil {
		return remote.LogoutResult{}, err
	}
	return connector.Logout(ctx, rec.Config, tokenstore.For(h.Home, name))
}

// oauthLogin refuses a connection that has no person's OAuth login.
func oauthLogin(rec *Record) error {
	r := rec.Config.Remote
	if r == nil || r.OAuth == nil || r.OAuth.Grant != remote.GrantAuthorizationCode {
		return blocking.New(blocking.OAuthNotConfigured, "connection %s has no OAuth authorization-code login (add it with --url URL --oauth)", rec.Name)
	}
	return nil
}

// StoredLogin is the state of connection rec's stored OAuth login on the
// host at home (nil for a connection without OAuth). It shows no token.
func StoredLogin(home string, rec *Record) *remote.LoginState {
	if rec.Config.Remote == nil || rec.Config.Remote.OAuth == nil {
		return nil
	}
	st := connector.StoredLogin(rec.Config, tokenstore.For(home, rec.Name))
	return &st
}
