package blocking

// Codes of `oa fleet audit` (issue 41): each names one host whose
// published log checkpoint (tag log-ID in the fleet's repository) the
// auditor cannot hold to what it saw before, and the auditor's own state.
const (
	// FleetLogMissing: the host has published no log checkpoint.
	FleetLogMissing Code = "fleet_log_missing"
	// FleetLogUnverified: what the host published is not a log checkpoint
	// document signed by its host key whose checkpoint its log key signed
	// (or the host key or log key is not the one seen before).
	FleetLogUnverified Code = "fleet_log_unverified"
	// FleetLogForked: the host's log shows another history than the one
	// the auditor saw: the same size with another root, or a consistency
	// proof from the size seen before that fails.
	FleetLogForked Code = "fleet_log_forked"
	// FleetLogRolledBack: the host's log is smaller than the one the
	// auditor saw before.
	FleetLogRolledBack Code = "fleet_log_rolled_back"
	// FleetLogStale: the host has not published its checkpoint within the
	// stale window (or its publishing time is ahead of this clock).
	FleetLogStale Code = "fleet_log_stale"
	// FleetLogQuorum: fewer witnesses cosigned the host's checkpoint than
	// its quorum (or the audit's --quorum).
	FleetLogQuorum Code = "fleet_log_quorum"
	// FleetAuditStateInvalid: the auditor's state file cannot be read as
	// the state of this fleet's audit.
	FleetAuditStateInvalid Code = "fleet_audit_state_invalid"
)

func init() {
	register(
		Entry{FleetLogMissing, StageFleet, "the host has published no log checkpoint",
			"Each host publishes its receipts log's newest checkpoint (tag log-ID in the fleet's repository) on every oa provision or oa agent sync once its log holds a receipt. Check that the host runs oa agent sync against this fleet and has run anything; an auditor cannot tell an idle host from one withholding its log, so the host is named until it publishes."},
		Entry{FleetLogUnverified, StageFleet, "the host's published log checkpoint does not verify",
			"What is under the host's log-ID tag is not a log checkpoint document of this fleet and host signed by its host key (the key the fleet file pins, else the one the auditor saw first), or its checkpoint is not signed by the host's log key, or the host key or log key differs from the one seen before. Ask the host's operator whether the host was re-keyed (oa receipts log-key prints the log key); if it was not, treat the host as compromised. The auditor's state keeps what it saw before."},
		Entry{FleetLogForked, StageFleet, "the host's log forked from the checkpoint seen before",
			"The host published a checkpoint of its receipts log that contradicts the one this auditor saw before: the same size with another root, or a consistency proof from the earlier size that fails. A log never rewrites its past: the host (or whoever holds its log key) showed two histories. Keep both checkpoints (the auditor's state has the earlier one) as evidence and investigate the host; the auditor's state is not advanced."},
		Entry{FleetLogRolledBack, StageFleet, "the host's log is smaller than the one seen before",
			"The host published a checkpoint of fewer receipts than this auditor saw before: its log was rolled back (restored from an older copy, or receipts were removed). Receipts never leave a log. Investigate the host; the auditor's state keeps the larger checkpoint it saw."},
		Entry{FleetLogStale, StageFleet, "the host has stopped publishing its log checkpoint",
			"The host's published checkpoint is older than --stale (hosts republish it with their status, every 5 minutes by default while syncing), or it is dated ahead of this machine's clock. Check that oa agent sync runs on the host and reaches the registry, and the host's clock."},
		Entry{FleetLogQuorum, StageFleet, "too few witnesses cosigned the host's checkpoint",
			"Fewer of the host's witnesses cosigned its published checkpoint than its policy's quorum (or the audit's --quorum). Without a quorum nothing but the host vouches that the log only grew. Check that the host's witnesses are reachable (the coordinator tells the operator when one fails) and that its policy's witnessing section names them."},
		Entry{FleetAuditStateInvalid, StageFleet, "the fleet auditor's state cannot be read",
			"The state file under --state is not the audit state of this fleet (damaged, too large, or another fleet's). It holds the checkpoints seen before, so it is never overwritten: restore it from a backup, or move it away to start the audit over (a new state trusts what it sees first)."},
	)
}
