package blocking

// Codes raised when a registry or a layout is hostile in time or in
// shape: it stalls, trickles, lists without end, or describes content
// with a descriptor no honest writer makes. Their text names the registry
// host and the bound, never the source's own bytes.
const (
	RegistryTimeout   Code = "registry_timeout"
	ReferrersTooMany  Code = "referrers_too_many"
	DescriptorInvalid Code = "descriptor_invalid"
)

func init() {
	register(
		Entry{RegistryTimeout, StageOCI, "the registry did not answer in time",
			"The registry accepted the connection but did not finish answering within the request timeout (one request, default 60s: --request-timeout, or `limits: registry_request_seconds` in the host policy), or the whole operation took longer than the operation timeout (default 10m: --timeout, or `limits: registry_operation_seconds`). Check that the registry is healthy and the network not saturated; raise the timeout only for a slow but genuine link. Nothing was changed by the request that timed out."},
		Entry{ReferrersTooMany, StageOCI, "the registry lists more referrers than oa reads",
			"The registry's referrers listing went on past the bound oa reads (64 pages or 4096 entries): a registry that keeps answering with another page, or a repository flooded with referrers. Ask the registry's owner to clean the repository's referrers, or copy the artifact with its signatures (`oa copy`) to a registry you trust. Nothing was changed."},
		Entry{DescriptorInvalid, StageOCI, "a manifest or index entry is not a valid descriptor",
			"A descriptor read from the registry or layout has a digest that is not a valid digest, an algorithm and its lower-case hex such as sha256:<64 hex> (for example one made to name a path), or a negative size. No honest writer produces it, and nothing was read through it. Re-push the artifact from its source (`oa push`) or do not trust the source."},
	)
}
