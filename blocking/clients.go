package blocking

// Codes raised when installing into, or uninstalling from, the MCP clients
// that keep their configuration per user (package harness).
const (
	HarnessClientHomeUnknown   Code = "harness_client_home_unknown"
	HarnessUninstallIncomplete Code = "harness_uninstall_incomplete"
)

func init() {
	register(
		Entry{HarnessClientHomeUnknown, StageHarness, "the client's per-user configuration folder cannot be found",
			"The client keeps its MCP configuration under the user's home folder: set HOME (USERPROFILE on Windows; APPDATA for Claude Desktop on Windows; CODEX_HOME for Codex if it is not ~/.codex) to an absolute path and run the command again."},
		Entry{HarnessUninstallIncomplete, StageHarness, "some of the installation was changed and was left in place",
			"oa harness uninstall removes only what install wrote and what is still as install wrote it: a file or server entry a person changed since, or a file added beside them, is left, named in the detail, with the install record. Move or restore those by hand, then run oa harness uninstall again."},
	)
}
