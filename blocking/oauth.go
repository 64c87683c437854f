package blocking

// Codes of a remote connection that authorizes with OAuth 2.1: the login
// a person runs (oa connection login) and the tokens used at call time.
// Like the remote codes they belong to the resolve stage. None of them
// ever carries a token, a code or an authorization server's error text.
// A login that is missing, expired or revoked is remote_login_required
// (blocking/remote.go).
const (
	OAuthTokenRejected     Code = "oauth_token_rejected"
	OAuthServerUnreachable Code = "oauth_server_unreachable"
	OAuthClientRefused     Code = "oauth_client_refused"
	OAuthDiscoveryFailed   Code = "oauth_discovery_failed"
	OAuthTokenStoreInvalid Code = "oauth_token_store_invalid"
	OAuthLoginFailed       Code = "oauth_login_failed"
	OAuthLoginTimeout      Code = "oauth_login_timeout"
	OAuthLoginDenied       Code = "oauth_login_denied"
	OAuthNotConfigured     Code = "oauth_not_configured"
)

func init() {
	register(
		Entry{OAuthTokenRejected, StageResolve, "the remote MCP server refused the connection's OAuth access token (HTTP 401); nothing was done",
			"The token was revoked, or was issued for another server (audience). oa dropped the access token and does not retry. Run oa connection login NAME --as NAME to authorize again; for a client-credentials connection, check the client's grant at the authorization server."},
		Entry{OAuthServerUnreachable, StageResolve, "the OAuth authorization server could not be reached or did not answer in time; nothing was sent to the MCP server",
			"A token could not be obtained or refreshed because the authorization server's token endpoint did not answer (within 30 seconds). Nothing reached the MCP server, so retrying is safe once the authorization server is back."},
		Entry{OAuthClientRefused, StageResolve, "the OAuth authorization server refused the connection's client credentials; nothing was sent to the MCP server",
			"The client id or the secret in --oauth-client-secret-file was not accepted (invalid_client or unauthorized_client). Fix the secret file or register the client, then replace the connection (oa connection add-remote NAME URL … --oauth --oauth-client-id ID --oauth-client-secret-file F --replace)."},
		Entry{OAuthDiscoveryFailed, StageResolve, "the server's OAuth metadata could not be found or did not verify",
			"oa reads the server's protected-resource metadata (RFC 9728) and its authorization server's metadata (RFC 8414 or OpenID discovery); one was missing, oversized, not https (except on loopback), named another resource or issuer, or offered no PKCE. Ask the server's operator, or check the connection's --url."},
		Entry{OAuthTokenStoreInvalid, StageResolve, "the host's OAuth token store cannot be used",
			"The key or token file under $OA_HOME/oauth is not a regular 0600 file of this account, or does not decrypt under the host's token key (edited, or copied from another host). Remove it with oa connection logout NAME --as NAME and run oa connection login NAME --as NAME."},
		Entry{OAuthLoginFailed, StageResolve, "the OAuth login did not complete; nothing was stored",
			"The authorization server refused the authorization code, the answer's state or issuer did not match the request, or no client could be registered. Check --oauth-client-id (a client registered for the redirect http://127.0.0.1/callback, any port) and run oa connection login NAME --as NAME again."},
		Entry{OAuthLoginTimeout, StageResolve, "no authorization answer reached oa's loopback redirect in time; nothing was stored",
			"Open the printed URL in a browser on this machine and finish signing in before the wait ends (--timeout), then run oa connection login NAME --as NAME again."},
		Entry{OAuthLoginDenied, StageResolve, "the person or the authorization server declined the authorization; nothing was stored",
			"The redirect carried an error (access_denied or another) instead of a code. Sign in with an account allowed to use the server and approve the request."},
		Entry{OAuthNotConfigured, StageResolve, "the connection has no OAuth login to run or remove",
			"oa connection login and logout are for a remote connection added with --oauth and no client secret (the authorization-code flow for a person). A client-credentials connection needs no login; any other connection uses its secret files."},
	)
}
