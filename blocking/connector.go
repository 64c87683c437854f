package blocking

// Codes raised while starting, listing or calling a downstream MCP server
// (a connector). They belong to the resolve stage because resolution is the
// first stage that talks to connectors; later stages raise the same codes
// when they talk to the same servers.
const (
	ConnectorConfigInvalid     Code = "connector_config_invalid"
	ConnectorSecretUnavailable Code = "connector_secret_unavailable"
	ConnectorStartFailed       Code = "connector_start_failed"
	ConnectorTimeout           Code = "connector_timeout"
	ConnectorCancelled         Code = "connector_cancelled"
	ConnectorInventoryInvalid  Code = "connector_inventory_invalid"
	ConnectorToolUnknown       Code = "connector_tool_unknown"
	ConnectorArgumentsInvalid  Code = "connector_arguments_invalid"
	ConnectorCallFailed        Code = "connector_call_failed"
	ConnectorResultInvalid     Code = "connector_result_invalid"
	ConnectorClosed            Code = "connector_closed"
	ConnectorStopFailed        Code = "connector_stop_failed"
)

func init() {
	register(
		Entry{ConnectorConfigInvalid, StageResolve, "connection configuration is not usable",
			"Fix the connection: give a command, list environment variable names (letters, digits, underscore; each once), and give the built-in sandbox connector no args, env or secret file. A remote connection (--url) takes an https:// URL (http:// only to a loopback address or with --plain-http) with no credentials or #fragment in it, and each --header once, not a reserved one, with its own --secret-file."},
		Entry{ConnectorSecretUnavailable, StageResolve, "a secret the connection needs is not available",
			"Set the named environment variable for oa, or fix the secret file: it must be a regular file owned by oa's user with mode 0600 (chmod 600 FILE) holding NAME=VALUE lines, each name once."},
		Entry{ConnectorStartFailed, StageResolve, "the downstream MCP server did not start",
			"Run the connection's command by hand and read its own error output; check the program exists, is executable, and speaks MCP over stdio."},
		Entry{ConnectorTimeout, StageResolve, "the downstream MCP server did not answer in time; its whole process tree was ended",
			"Check the server's own error output and its upstream service; raise the timeout only if the server is known to be slow. A timed-out call may have made its effect: a person checks before retrying."},
		Entry{ConnectorCancelled, StageResolve, "the operation was cancelled; the downstream server's whole process tree was ended",
			"Nothing to fix in the connection. A cancelled call may have made its effect: a person checks before retrying."},
		Entry{ConnectorInventoryInvalid, StageResolve, "the downstream tool list breaks the MCP tool rules",
			"Fix the server: every tool needs a unique valid name (letters, digits, _ - .), a description, an input schema that is a JSON object schema of type object, and an output schema (if any) of type object."},
		Entry{ConnectorToolUnknown, StageResolve, "the tool is not in the downstream server's tool list",
			"Bind only to a tool the server lists; a tool that disappeared is drift: re-resolve and approve again."},
		Entry{ConnectorArgumentsInvalid, StageResolve, "the call's arguments do not match the tool's input schema",
			"Send a JSON object that satisfies the tool's inputSchema; nothing was sent to the server."},
		Entry{ConnectorCallFailed, StageResolve, "the downstream call failed at the protocol level",
			"Check the server's own error output. If the server ended during the call its effect is unknown: a person checks before retrying."},
		Entry{ConnectorResultInvalid, StageResolve, "the downstream result does not match the tool's output schema",
			"The server broke its own contract after the call was made, so its effect is unknown: a person checks, then fix or replace the server."},
		Entry{ConnectorClosed, StageResolve, "the connection to the downstream server is closed",
			"Open a new connection; a session ends on Close, on a timeout or cancel, or when the server exits."},
		Entry{ConnectorStopFailed, StageResolve, "the downstream server's process group could not be verified ended",
			"Find and end the server's processes by hand (ps -o pid,pgid,comm), then check why they ignore SIGKILL (a process stuck in the kernel, or a different user)."},
	)
}
