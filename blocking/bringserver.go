package blocking

// Codes of bringing a server a user already runs into oa (issue 39): the
// registry entries imported from a connection's inventory, a step's
// arguments checked against its tool's input schema at resolve, a
// command the confinement profile cannot read, client configurations and
// MCP registry server.json files read as proposals.
const (
	// RegistryImportUnverified: oa registry import reads a connection's
	// verified inventory, and the connection's current revision is not
	// verified.
	RegistryImportUnverified Code = "registry_import_unverified"
	// RegistryImportUneditable: the registry file's tools list is not in
	// a form oa can add entries to without rewriting the file.
	RegistryImportUneditable Code = "registry_import_uneditable"
	// StepArgumentsInvalid: a step's arguments, as its evaluator builds
	// them, break the input schema of the tool that performs its
	// capability (a required field missing, a field the tool does not
	// take, a field of the wrong type).
	StepArgumentsInvalid Code = "step_arguments_invalid"
	// ConnectionCommandUnreadable: a confined stdio server's command, or
	// the interpreter or shim it starts through, lies outside what its
	// confinement profile lets it read, so it would fail with a bare
	// "Permission denied".
	ConnectionCommandUnreadable Code = "connection_command_unreadable"
	// ConnectionPreinstallFailed: --preinstall could not install the
	// server's package into the connection's own folder.
	ConnectionPreinstallFailed Code = "connection_preinstall_failed"
	// ServerJSONInvalid: an MCP registry server.json cannot be turned into
	// a connection.
	ServerJSONInvalid Code = "server_json_invalid"
)

func init() {
	register(
		Entry{RegistryImportUnverified, StageResolve, "the connection's current revision is not verified",
			"oa registry import lists the tools a connection's server was verified to offer. Run `oa connection verify NAME --as PERSON` first, then import again. Nothing was written."},
		Entry{RegistryImportUneditable, StageResolve, "oa cannot add entries to this registry file's tools list",
			"oa adds imported entries inside the file's top-level `tools: [ … ]` list, keeping everything else as written. Write the list as a plain list literal (`tools: [ {…}, … ]`), or add the entries by hand from `oa registry import NAME --json`. Nothing was written."},
		Entry{StepArgumentsInvalid, StageResolve, "a step's arguments break the input schema of the tool that performs it",
			"The refusal names the job, the step, the field and the tool. Change the step's arguments evaluator to build what the tool's inputSchema asks (see `oa connection show NAME --json` for the tool's schema), or map the capability to a tool that takes these arguments in the registry. Nothing was bound."},
		Entry{ConnectionCommandUnreadable, StageResolve, "the server's command needs a path its confinement profile does not let it read",
			"A confined server reads only the system folders and what --read/--write grant, so a command under the home folder (npx or uvx from nvm or pyenv, a binary under ~/.local/bin) fails with a bare `Permission denied`. Add the --read the refusal names, install the server where the profile reads (for npx, --preinstall installs the package into the connection's own folder), or give the command's real path. Nothing was recorded."},
		Entry{ConnectionPreinstallFailed, StageResolve, "the server's package could not be installed into the connection's folder",
			"--preinstall runs the package manager (npm for npx) once, at add time, with network, into the connection's own folder, so the confined server starts with no network. Check the package name and version, that npm is installed and that the network reaches its registry, then add again. Nothing was recorded."},
		Entry{ServerJSONInvalid, StageResolve, "the server.json cannot be turned into a connection",
			"Give --from-server-json an MCP registry server.json (schema 2025-09-29 or later) with one package of registryType npm (runtimeHint npx) or pypi (uvx), or one remote of type streamable-http; environment variables and headers are taken by NAME, never by value. Nothing was recorded."},
	)
}
