package blocking

// Codes of a remote downstream MCP server (one reached by URL) that did
// not complete the MCP handshake, did not answer it in time, or failed
// its verify. They stand where a server started by command gets
// connector_start_failed, connector_timeout and connection_verify_failed,
// whose fixes speak of its command and process tree; these speak of the
// URL, the network and the server. Resolve stage, like the remote codes.
const (
	RemoteStartFailed  Code = "remote_start_failed"
	RemoteTimeout      Code = "remote_timeout"
	RemoteVerifyFailed Code = "remote_verify_failed"
)

func init() {
	register(
		Entry{RemoteStartFailed, StageResolve, "the remote MCP server did not complete the MCP handshake",
			"Something answered at the connection's URL, but not as an MCP server over Streamable HTTP or HTTP+SSE (an error status, a page that is not MCP, or a broken answer). Check the URL (oa connection show NAME), that a proxy between this host and the server passes it through, and the server's own logs; then run oa connection verify NAME --as NAME. Nothing was called."},
		Entry{RemoteTimeout, StageResolve, "the remote MCP server did not complete the MCP handshake in time",
			"The server or the network did not answer within the timeout. Check that the server at the connection's URL is up and not overloaded, and the network path to it (DNS, proxy, firewall), then run oa connection verify NAME --as NAME. Nothing was called."},
		Entry{RemoteVerifyFailed, StageResolve, "the connection's remote server could not be verified",
			"The refusal after this one says why. Check the connection's URL (oa connection show NAME), the network between this host and the server, and the server itself, then verify again. The connection reads as offline until then."},
	)
}
