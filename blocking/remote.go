package blocking

// Codes raised while reaching a remote downstream MCP server over
// Streamable HTTP. Like the connector codes they belong to the resolve
// stage, the first that talks to a connection; the coordinator raises the
// same codes for the same servers. Each says whether the request reached
// the server, because that decides whether a change may have been made.
const (
	RemoteUnreachable   Code = "remote_unreachable"
	RemoteTLSUntrusted  Code = "remote_tls_untrusted"
	RemoteCAInvalid     Code = "remote_ca_invalid"
	RemoteUnauthorized  Code = "remote_unauthorized"
	RemoteForbidden     Code = "remote_forbidden"
	RemoteNotSent       Code = "remote_not_sent"
	RemoteTooLarge      Code = "remote_response_too_large"
	RemoteLoginRequired Code = "remote_login_required"
)

func init() {
	register(
		Entry{RemoteUnreachable, StageResolve, "the remote MCP server could not be reached; nothing was sent",
			"The address did not resolve or nothing accepted the connection. Check the connection's URL (oa connection show NAME) and that the server is running, then run oa connection verify NAME. Nothing reached the server, so retrying is safe."},
		Entry{RemoteTLSUntrusted, StageResolve, "the remote MCP server's certificate is not trusted; nothing was sent",
			"The TLS handshake failed: the certificate is expired, for another name, or signed by an authority this host does not trust. Fix the server's certificate, or add its authority with oa connection add-remote NAME URL … --ca-file FILE --replace. Nothing reached the server."},
		Entry{RemoteCAInvalid, StageResolve, "the connection's CA file cannot be used",
			"The --ca-file must be a readable PEM file of at most 1 MiB holding at least one certificate. Fix the file or the connection (oa connection add-remote NAME URL … --ca-file FILE --replace)."},
		Entry{RemoteUnauthorized, StageResolve, "the remote MCP server refused oa's credentials (HTTP 401); nothing was done",
			"The server did not accept the connection's credentials. Renew the token in the connection's secret file, or for an OAuth connection run oa connection login NAME --as NAME, then retry."},
		Entry{RemoteForbidden, StageResolve, "the remote MCP server forbids this request (HTTP 403); nothing was done",
			"The credentials are valid but lack the permission or scope this request needs (or are for another resource). Ask the server's operator for access, or log in again with the right account (oa connection login NAME --as NAME)."},
		Entry{RemoteNotSent, StageResolve, "the request never reached the remote MCP server; nothing was sent",
			"The request failed before it was written (a connection could not be made or a secret could not be read). Nothing was sent, so retrying is safe once the server is reachable."},
		Entry{RemoteTooLarge, StageResolve, "the remote MCP server sent a response or event larger than oa reads",
			"Nothing past the limit was read and the session was ended. A response body or server-sent event over 4 MiB is refused; if the request was a change, its effect is unknown: a person checks before retrying."},
		Entry{RemoteLoginRequired, StageResolve, "the connection's OAuth login is missing, expired or revoked",
			"Run oa connection login NAME --as NAME to authorize again (a person signs in in the browser). Nothing was sent with the old token; oa never retries in a loop."},
	)
}
