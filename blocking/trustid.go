package blocking

// Codes raised when signers trusted by certificate identity are checked
// outside admission: by an auditor verifying an exported chain, and by a
// host holding a fleet envelope's ceiling to the release's signer.
const (
	AuditIdentityMismatch      Code = "audit_identity_mismatch"
	FleetPublisherNotInCeiling Code = "fleet_publisher_not_in_ceiling"
)

func init() {
	register(
		Entry{AuditIdentityMismatch, StageAdmit, "the admission was made with another signer than the identity the auditor trusts",
			"The bundle's signatures verify, but the host-signed admission records a publisher or authority whose certificate named an identity that the identity given (`--certificate-identity[-regexp]`/`--certificate-oidc-issuer[-regexp]`, or the `--authority-` forms) does not match, or a signer trusted by key. The host admitted the release trusting someone else than you do. Compare the admission's signer (`oa audit verify --json`, link admission) with the identity you expect; give the right identity, or a key with `--publisher-key`/`--authority-key` if the host trusted a key."},
		Entry{FleetPublisherNotInCeiling, StageAdmit, "the release was admitted with a publisher the envelope's ceiling does not name",
			"The fleet's envelope for this host names, in its ceiling's `publishers`, the publishers (by key, or by certificate identity and optionally the digest of the trusted root) whose releases the fleet pre-approves. The host admitted the release under its own policy, but its publisher is none of them, so the binding is not pre-approved: it waits for a person on the host (`oa bind`). If the signer is right, add it to the deployment's `ceiling: publishers` in the fleet file and publish again; otherwise the release was signed by someone the fleet does not expect — find out why before binding it."},
	)
}
