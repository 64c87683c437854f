package blocking

// Codes of a host store that does not agree with what the host signed,
// beyond the receipt chain's own (audit.go): the revocations, and the
// record of the process trees a coordinator owns (its OwnedTrees).
const (
	RevocationsDisagree Code = "revocations_disagree"
	AuditHostUnverified Code = "audit_host_unverified"
)

func init() {
	register(
		Entry{RevocationsDisagree, StageAdmit, "the host's revocations do not agree with its signed revocation head",
			"A revocation row was removed or edited, the host-signed revocation head (versions of kind revocation-head) was removed or edited, or $OA_HOME/revocations.head names revocations the store no longer holds. A release revoked on this host may have been put back in service, so no release is treated as active until the cause is known. Keep the database and $OA_HOME/revocations.head for the auditor and restore the database from a backup or an audit export."},
		Entry{AuditHostUnverified, StageCoordinator, "the bundle's host name is not the one the host signed",
			"host.json names a host that is not the host of the records signed with the --host-key given (the bundle's policy names another host, or host.json was edited). The bundle was edited or mixes documents of two hosts; export it again from the host."},
	)
}
