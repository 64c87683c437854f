package blocking

// Codes of the host's release store: the verified local copy of every
// bound release, kept under $OA_HOME/releases at bind time, that the
// coordinator serves from with no network.
const (
	ReleaseStoreDamaged Code = "release_store_damaged"
	ReleaseUnavailable  Code = "release_unavailable"
)

func init() {
	register(
		Entry{ReleaseStoreDamaged, StageOCI, "the host's kept copy of the bound release does not match the binding",
			"A blob of the release under $OA_HOME/releases is missing a part, was changed, or cannot be read, so its digests are not the ones the binding names. oa did not use it: the release is read again from the bound reference and the kept copy repaired from it. If this repeats, check the disk and who writes to $OA_HOME."},
		Entry{ReleaseUnavailable, StageOCI, "the bound release is neither in the host's release store nor readable at its reference",
			"The kept copy under $OA_HOME/releases is missing or damaged (the refusal after this one says which), and the bound reference cannot be read either (the last refusal says why: often registry_unreachable). Bring the registry back, or copy the release into a reachable place (oa copy) and bind it again (oa bind); the next successful read refills the kept copy. Nothing was served."},
	)
}
