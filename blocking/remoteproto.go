package blocking

// RemoteOriginChanged: a remote server (an HTTP+SSE one names where its
// messages go) pointed oa at another scheme or host than the connection's
// URL. The connection's secrets are sent only to its own origin.
const RemoteOriginChanged Code = "remote_origin_changed"

func init() {
	register(Entry{RemoteOriginChanged, StageResolve, "the remote MCP server sent oa to another origin; nothing was sent there",
		"The server asked for messages to go to another scheme or host than the connection's URL. oa sends a connection's requests and secrets only to the URL's own origin. If the server really moved, add the connection again with its new URL (oa connection add-remote NAME URL … --replace) and verify it."})
}
