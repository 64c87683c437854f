package blocking

// Codes raised while copying an artifact with its signatures and
// attestations.
const (
	CopyUnsigned          Code = "copy_unsigned"
	CopySignatureTooLarge Code = "copy_signature_too_large"
)

func init() {
	register(
		Entry{CopyUnsigned, StageOCI, "the artifact to copy has no signature",
			"Nothing was copied: --require-signed found no signature for this digest at the source, neither a cosign sha256-<hex>.sig tag nor a sigstore bundle referrer. Have the publisher sign the exact digest at the source (`oa sign --key KEY REF@sha256:…` or `cosign sign --key`), then copy again; or copy without --require-signed to carry it unsigned."},
		Entry{CopySignatureTooLarge, StageOCI, "a signature or attestation manifest is too large",
			"Nothing was copied: the source's sha256-<hex>.sig or .att tag names a manifest larger than 4 MiB, which is not one cosign or oa writes. Remove or replace that tag at the source (re-sign or re-attest the digest), then copy again."},
	)
}
