package blocking

// Codes raised while reading host policy or admitting a release.
const (
	PolicyUnreadable            Code = "policy_unreadable"
	PolicyInvalid               Code = "policy_invalid"
	PolicyKeyInvalid            Code = "policy_key_invalid"
	PolicyAuthorityIsPublisher  Code = "policy_authority_is_publisher"
	ProfileUnknown              Code = "profile_unknown"
	PublisherKeyOutsideWindow   Code = "publisher_key_outside_window"
	AuthorityKeyOutsideWindow   Code = "authority_key_outside_window"
	AttestationsInsufficient    Code = "attestations_insufficient"
	ProtocolNotSpoken           Code = "protocol_not_spoken"
	FeatureNotOffered           Code = "feature_not_offered"
	EvaluatorAuthorityUntrusted Code = "evaluator_authority_untrusted"
	ComponentNotPure            Code = "component_not_pure"
	CapabilityOutsideHost       Code = "capability_outside_host_ceiling"
)

func init() {
	register(
		Entry{PolicyUnreadable, StageAdmit, "host policy cannot be read",
			"Pass the host policy file (CUE of package host); `oa host init` writes a starter one under $OA_HOME."},
		Entry{PolicyInvalid, StageAdmit, "host policy does not match #Policy",
			"Change the field so it matches schemas/host/policy.cue; `oa policy check FILE` and `cue vet -c schemas/host/policy.cue schemas/host/vet/policy_root.cue FILE` show the same error."},
		Entry{PolicyKeyInvalid, StageAdmit, "a key in the host policy is not a usable public key",
			"Paste the whole .pub file written by `oa keys generate` or `cosign generate-key-pair`."},
		Entry{PolicyAuthorityIsPublisher, StageAdmit, "a conformance authority's key is also a publisher's",
			"An authority must be independent of every publisher: trust a different key for the authority."},
		Entry{ProfileUnknown, StageAdmit, "admission profile not defined by the host policy",
			"Use a profile listed under profiles in the host policy (demo, standard or regulated), or define it there."},
		Entry{PublisherKeyOutsideWindow, StageAdmit, "publisher key used outside its validity window",
			"The signing key is trusted only between its not_before and not_after; have the release signed with a current key, or correct the window in the host policy."},
		Entry{AuthorityKeyOutsideWindow, StageAdmit, "conformance authority key used outside its validity window",
			"Have the release attested with a current authority key, or correct the window in the host policy."},
		Entry{AttestationsInsufficient, StageAdmit, "fewer independent attestations than the profile demands",
			"Get the release attested by more trusted conformance authorities, or admit it under a profile that demands fewer."},
		Entry{ProtocolNotSpoken, StageAdmit, "worker protocol not spoken by this host",
			"Upgrade the host to an oa that speaks the package's protocol and list it under protocols, or use a release for a protocol this host speaks."},
		Entry{FeatureNotOffered, StageAdmit, "required host feature not offered",
			"The package requires a feature this host does not list under features; offer it, or do not admit this package here."},
		Entry{EvaluatorAuthorityUntrusted, StageAdmit, "evaluator authority not trusted by this host",
			"List the package's evaluator authority under evaluator_authorities only if this host should evaluate its components."},
		Entry{ComponentNotPure, StageAdmit, "component imports a package outside the host's pure allow-list",
			"Components may import only the host's pure_packages; widen the list only for packages without I/O, or do not admit this package."},
		Entry{CapabilityOutsideHost, StageAdmit, "capability outside the host ceiling",
			"The package asks for a capability key or risk this host never admits; widen ceiling in the host policy only if this host should ever grant it."},
	)
}

// Codes about admission records and their state.
const (
	HostNotInitialized  Code = "host_not_initialized"
	HostExists          Code = "host_exists"
	HomeNotFolder       Code = "home_not_folder"
	ReleaseRevoked      Code = "release_revoked"
	AdmissionRollback   Code = "admission_rollback"
	AdmissionMissing    Code = "admission_missing"
	AdmissionExpired    Code = "admission_expired"
	AdmissionMismatched Code = "admission_mismatched"
	AdmissionUnverified Code = "admission_unverifiable"
)

func init() {
	register(
		Entry{HostExists, StageAdmit, "the folder already holds a host (or the file already exists)",
			"Nothing is ever overwritten: choose a new folder ($OA_HOME or the quickstart DIR), or remove the old host yourself after keeping what you need."},
		Entry{HomeNotFolder, StageAdmit, "the host folder ($OA_HOME) is not a folder",
			"$OA_HOME (or the quickstart DIR) names a file or something else that is not a folder; point it at a folder, or at a path that does not exist yet (oa makes it)."},
		Entry{HostNotInitialized, StageAdmit, "this host has no policy or host key yet",
			"Run `oa host init` (with --publisher-key and --authority-key to trust them) to write a host key and a starter policy under $OA_HOME."},
		Entry{ReleaseRevoked, StageAdmit, "release revoked on this host",
			"Revocation is permanent for a digest. Publish a new release (a new digest) and admit that."},
		Entry{AdmissionRollback, StageAdmit, "re-admitting this release goes back from a newer admission",
			"Another release of this package was admitted after this one, so admitting this one again is a rollback, never made silently: `oa admit REF@sha256:… --rollback --reason TEXT --as NAME` records it with who and why (the newer release stays admitted until revoked; re-bind each deployment that should go back). Or publish a fixed release with a new digest."},
		Entry{AdmissionMissing, StageAdmit, "release not admitted on this host",
			"Admit it: `oa admit REF@sha256:… --as NAME`."},
		Entry{AdmissionExpired, StageAdmit, "admission expired",
			"Admit the release again (the policy decides how long an admission lasts)."},
		Entry{AdmissionMismatched, StageAdmit, "admission does not match this release or the current policy",
			"The host policy changed since this release was admitted; admit the release again under the current policy."},
		Entry{AdmissionUnverified, StageAdmit, "admission record fails its signature check",
			"The stored record was changed or was not signed by this host's key. Treat the host store as tampered: investigate, then admit again."},
	)
}
