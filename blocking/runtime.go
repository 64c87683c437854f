package blocking

// Codes raised by the harness runtime port (package harness): installing a
// bound deployment into an MCP client and inspecting that installation.
const (
	HarnessClientUnknown        Code = "harness_client_unknown"
	HarnessClientConfigInvalid  Code = "harness_client_config_invalid"
	HarnessInstallDirInvalid    Code = "harness_install_dir_invalid"
	HarnessNotInstalled         Code = "harness_not_installed"
	HarnessRecordInvalid        Code = "harness_record_invalid"
	HarnessServerEntryMissing   Code = "harness_server_entry_missing"
	HarnessServerEntryChanged   Code = "harness_server_entry_changed"
	HarnessFilesChanged         Code = "harness_files_changed"
	HarnessProjectionStale      Code = "harness_projection_stale"
	HarnessBindingChanged       Code = "harness_binding_changed"
	HarnessTurnUnsupported      Code = "harness_turn_unsupported"
	HarnessTranscriptUnreadable Code = "harness_transcript_unreadable"
)

func init() {
	register(
		Entry{HarnessClientUnknown, StageHarness, "the harness client is not one oa installs into",
			"Give --client with one of claude-code, claude-desktop, cursor, vscode, codex, gemini-cli, windsurf, zed (each written in that client's own configuration file) or generic (a standalone MCP server file and projection folder); oa harness install --help lists the file each one writes."},
		Entry{HarnessClientConfigInvalid, StageHarness, "the client's MCP configuration cannot be merged",
			"The client's configuration file (named with its line and column) does not parse, or its servers key is not an object or table, or it holds the entry in a form oa does not edit; fix or move the file by hand (oa never rewrites a file it cannot read) and run oa harness install again."},
		Entry{HarnessInstallDirInvalid, StageHarness, "the installation cannot be written there",
			"The install folder must be writable, and a skill folder oa would replace must be empty or hold only an earlier oa installation of the same skill; move your own skill of that name aside and run oa harness install again."},
		Entry{HarnessNotInstalled, StageHarness, "the deployment is not installed in this client",
			"Run oa harness install --client CLIENT --deployment NAME (with the same --dir) to write the MCP server entry, the skill folder and the install record."},
		Entry{HarnessRecordInvalid, StageHarness, "the install record cannot be read",
			"The install record is not one oa wrote for this deployment and client; run oa harness install again to replace it."},
		Entry{HarnessServerEntryMissing, StageHarness, "the client has no MCP server entry for the deployment",
			"The client's MCP configuration lacks the oa-DEPLOYMENT server (the file or the entry was removed); run oa harness install again to restore it."},
		Entry{HarnessServerEntryChanged, StageHarness, "the client's MCP server entry does not serve this deployment",
			"The oa-DEPLOYMENT entry no longer runs the recorded oa executable as coordinator serve --deployment DEPLOYMENT with this OA_HOME (or that executable is gone); run oa harness install again to rewrite it."},
		Entry{HarnessFilesChanged, StageHarness, "installed skill or projection files changed",
			"A file oa installed is missing or altered, or a file was added next to them; oa never deletes a file it did not write, so remove any added file, then run oa harness install again to replace the skill and projection folders with the bound projection."},
		Entry{HarnessProjectionStale, StageHarness, "the installed projection is not the bound one",
			"The installed persona, skill or materialization digest differs from the bound plan's; run oa harness install again so the client gets the projection of the bound release (rebind first if the release changed)."},
		Entry{HarnessBindingChanged, StageHarness, "the deployment was rebound since it was installed",
			"The binding's sequence number or plan digest differs from the one installed; check the new binding with oa bind inspect, then run oa harness install again."},
		Entry{HarnessTurnUnsupported, StageHarness, "this harness does not run model turns",
			"An MCP-client harness (Claude Code, a generic client) owns its own model loop: start a session in the client, which calls the coordinator's tools. oa never runs or imitates a model turn."},
		Entry{HarnessTranscriptUnreadable, StageHarness, "the deployment's runs cannot be read",
			"The host's state database holds a run record oa cannot decode; run oa receipts verify and keep the state database as it is for the auditor."},
	)
}
