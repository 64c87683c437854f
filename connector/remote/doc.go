// Package remote is how oa reaches a downstream MCP server over HTTP: the
// HTTP side of a connector session to a remote server (Connect, the
// Connection it returns), its configuration (Config, checked by
// Normalize), and OAuth 2.1 (Login, Logout, StoredLogin, and the access
// token each request takes). The MCP session itself, and what is said
// over it, is package connector's; connector chooses this transport for a
// Config whose Remote is set, and passes in the MCP client.
//
// A server is reached over Streamable HTTP with the go-sdk's
// StreamableClientTransport; HTTP+SSE is tried only after a 404 or 405,
// held to the URL's origin. Secret headers and bearer tokens are read per
// request from 0600 files (package secretfile) and sent only to the
// connection's own origin; bodies and events are capped at 4 MiB. A
// failed request is named from what was seen of it (a send trace per
// request: never written, refused, or sent unanswered):
// remote_unreachable, remote_tls_untrusted, remote_unauthorized,
// remote_forbidden, remote_not_sent, remote_response_too_large,
// remote_origin_changed.
//
// OAuth (oauth.go, login.go): Login runs the go-sdk's authorization-code
// flow (PKCE, resource indicator, loopback redirect) and keeps the tokens
// sealed in a tokenstore.Store; each request takes its access token from
// there, refreshed under a file lock, and a 401 or a missing login is a
// named refusal, never a retry. A client-credentials connection gets its
// token with no person.
//
// Refusals are *blocking.Error values whose text is fixed copy, rule
// names and field paths: never a secret value, a token, or the URL's
// user part.
package remote
