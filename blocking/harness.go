package blocking

// Codes raised while projecting an admitted release onto this host's
// harness (persona, SKILL.md, read-only tools, effect declarations).
const (
	ProjectionReleaseMismatch Code = "projection_release_mismatch"
	ProjectionNameInvalid     Code = "projection_name_invalid"
	ProjectionUnsafeText      Code = "projection_unsafe_text"
	ProjectionOutInvalid      Code = "projection_out_invalid"
)

func init() {
	register(
		Entry{ProjectionReleaseMismatch, StageHarness, "the Worker IR is not the release's",
			"Project only from the verified artifact: run `oa project REF@sha256:…`, which fetches the IR, checks it hashes to the admitted workerIrDigest and projects that."},
		Entry{ProjectionNameInvalid, StageHarness, "a package name cannot be used as a host-native name",
			"The package name must be an Agent Skills name (lower-case letters, digits and single hyphens, at most 64), capability keys MCP tool names ([a-z0-9_.-], at most 128) and skill docs plain file names; correct the bundle and publish a new release."},
		Entry{ProjectionUnsafeText, StageHarness, "projected text looks like customer state",
			"The persona or skill text a model would read carries something shaped like customer state (a secret, an address, a long digit run); correct the bundle text and publish a new release."},
		Entry{ProjectionOutInvalid, StageHarness, "the projection cannot be written there",
			"Give --out a new or empty folder, or the folder of an earlier projection of the same package (it is replaced whole); its parent folder must be writable and it must not be a symbolic link."},
	)
}
