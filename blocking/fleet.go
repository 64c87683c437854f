package blocking

// StageFleet raises the refusals of fleet provisioning that belong to no
// single pipeline stage: the fleet file, envelopes, revocation lists and
// host statuses read from the registry.
const StageFleet Stage = "fleet"

// Codes raised while checking a fleet file, publishing envelopes and
// provisioning a host from one.
const (
	FleetUnreadable            Code = "fleet_unreadable"
	FleetInvalid               Code = "fleet_invalid"
	FleetHostAmbiguous         Code = "fleet_host_ambiguous"
	FleetCeilingOutsidePackage Code = "fleet_ceiling_outside_package"
	FleetKeyMismatch           Code = "fleet_key_mismatch"
	FleetNotTrusted            Code = "fleet_not_trusted"
	FleetEnvelopeMissing       Code = "fleet_envelope_missing"
	FleetEnvelopeInvalid       Code = "fleet_envelope_invalid"
	FleetEnvelopeUnverified    Code = "fleet_envelope_unverified"
	FleetEnvelopeWrongHost     Code = "fleet_envelope_wrong_host"
	FleetEnvelopeRollback      Code = "fleet_envelope_rollback"
	FleetRevocationsUnverified Code = "fleet_revocations_unverified"
	FleetIntervalInvalid       Code = "fleet_interval_invalid"
	FleetRevocationsRollback   Code = "fleet_revocations_rollback"
	FleetRecordUnverified      Code = "fleet_record_unverified"
	FleetKeyReused             Code = "fleet_key_reused"

	// AwaitingApproval and FleetCeilingExceeded stop provisioning before
	// the binding: a person completes it with `oa bind`.
	AwaitingApproval     Code = "awaiting_approval"
	FleetCeilingExceeded Code = "fleet_ceiling_exceeded"
)

func init() {
	register(
		Entry{FleetUnreadable, StageFleet, "the fleet file cannot be read",
			"Pass the fleet file (CUE of package fleet, shaped by #Fleet in schemas/fleet/fleet.cue)."},
		Entry{FleetInvalid, StageFleet, "the fleet file does not match #Fleet",
			"Change the field so it matches schemas/fleet/fleet.cue; `oa fleet check FILE` shows every error with its place. Releases are REGISTRY/REPO@sha256:… and the registry is HOST/REPO without tag or digest."},
		Entry{FleetHostAmbiguous, StageFleet, "a host is selected by more than one deployment",
			"Each host runs at most one deployment of a fleet: narrow the deployments' selectors or change the host's labels so that at most one selects it."},
		Entry{FleetCeilingOutsidePackage, StageFleet, "a deployment's ceiling names what the package does not ask for",
			"A fleet ceiling may only narrow the package: remove the pattern that matches none of the release's capabilities, or lower max_risk to at most the package's."},
		Entry{FleetKeyMismatch, StageFleet, "the fleet key is not the one that signed the fleet's artifacts",
			"Publish with the fleet key the hosts trust; the envelope, revocation list or status already in the registry was signed by another key (rotate keys on every host policy first)."},
		Entry{FleetNotTrusted, StageAdmit, "this host does not trust the fleet",
			"Add a fleet section to the host policy (fleet: {name: NAME, keys: {NAME: key: \"…\"}}) with the fleet's public key, check it with `oa policy check`, then provision again."},
		Entry{FleetEnvelopeMissing, StageFleet, "no provisioning envelope under that reference",
			"Have the fleet operator run `oa fleet publish` for a fleet file that lists this host, and give --envelope REGISTRY/REPO:host-ID."},
		Entry{FleetEnvelopeInvalid, StageFleet, "the reference does not hold a provisioning envelope",
			"The artifact is not an oa fleet envelope (artifact type, layers or JSON); give the tag `oa fleet publish` printed for this host."},
		Entry{FleetEnvelopeUnverified, StageAdmit, "the envelope is not signed by a trusted fleet key",
			"The envelope's signature does not verify with any fleet key of the host policy that is valid now. Check the fleet keys in the policy, or have the fleet operator publish again with the trusted key."},
		Entry{FleetEnvelopeWrongHost, StageAdmit, "the envelope is for another host or fleet",
			"An envelope names exactly one host and fleet; give this host's own tag (host-ID, ID the host name of its policy) of the fleet its policy trusts."},
		Entry{FleetEnvelopeRollback, StageAdmit, "the envelope is older than one this host applied",
			"A host never goes back to an older envelope. If the registry was restored from a backup, have the fleet operator publish again (the sequence continues from the highest applied)."},
		Entry{FleetRevocationsUnverified, StageAdmit, "the fleet's revocation list is not signed by a trusted fleet key",
			"Nothing is provisioned while the revocation list cannot be trusted. Have the fleet operator publish it again with `oa revoke DIGEST --publish` and the trusted fleet key."},
		Entry{FleetRevocationsRollback, StageAdmit, "the fleet's revocation list is older than one this host applied, or gone",
			"A host never goes back to an older revocation list, nor takes a missing one once it has seen one. If the registry was restored from a backup or the list deleted, have the fleet operator publish it again with `oa revoke DIGEST --publish` (the sequence continues from the highest published; --reset-revocations starts a new list above it)."},
		Entry{FleetRecordUnverified, StageAdmit, "this host's record of what it applied from the fleet does not verify",
			"The host's store holds a fleet record (applied envelope or revocation list) whose signature does not verify with this host's key: the store was changed outside oa or the host key replaced. Restore the host folder from a backup, or provision a new host."},
		Entry{FleetKeyReused, StageAdmit, "a fleet key is also a publisher's or an authority's",
			"A fleet key must be its own key: a publisher or conformance authority key that also signs envelopes could provision and pre-approve its own releases. Give the fleet its own key in the policy's fleet section."},
		Entry{FleetIntervalInvalid, StageFleet, "the interval is not a positive duration",
			"Give --interval as a Go duration of at least one second, such as 30s or 5m."},
		Entry{AwaitingApproval, StageBind, "the plan waits for a person's approval on this host",
			"The host policy does not let the fleet pre-approve bindings (fleet.pre_approve), so the fleet neither admits nor binds the release here: what is bound now keeps being served. Admit the release with `oa admit REF@sha256:… --as NAME` (unless oa provision reports it admitted; admitting it retires the package's release bound now), review the plan with `oa resolve`, then approve it with `oa bind REF@sha256:… --deployment NAME --model M --as NAME`; the next sync reports it bound."},
		Entry{FleetCeilingExceeded, StageBind, "the plan reaches past the envelope's ceiling",
			"The fleet pre-approves only capabilities and risks inside the deployment's ceiling, and admits nothing it cannot bind. A person on the host may admit the release (`oa admit REF@sha256:… --as NAME`) and approve the plan with `oa bind`, or the fleet operator widens the ceiling and publishes again."},
	)
}
