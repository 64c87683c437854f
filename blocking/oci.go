package blocking

// Codes raised while packing, moving, signing, attesting or verifying an
// OCI artifact.
const (
	ReferenceInvalid        Code = "reference_invalid"
	ReferenceNotDigest      Code = "reference_not_digest"
	ArtifactNotFound        Code = "artifact_not_found"
	ArtifactNotWorker       Code = "artifact_not_worker"
	ArtifactLayersInvalid   Code = "artifact_layers_invalid"
	LayerDigestMismatch     Code = "layer_digest_mismatch"
	IRAnnotationMismatch    Code = "ir_annotation_mismatch"
	KeyInvalid              Code = "key_invalid"
	KeyPasswordWrong        Code = "key_password_wrong"
	SignatureMissing        Code = "signature_missing"
	SignatureUntrusted      Code = "signature_untrusted"
	SignatureWrongSubject   Code = "signature_wrong_subject"
	AttestationMissing      Code = "attestation_missing"
	AttestationUntrusted    Code = "attestation_untrusted"
	AttestationWrongSubject Code = "attestation_wrong_subject"
	AttestationByPublisher  Code = "attestation_by_publisher"
	AttestationPredicateBad Code = "attestation_predicate_invalid"
	AttestationIRMismatch   Code = "attestation_ir_mismatch"
	ConformanceFailed       Code = "conformance_failed"
)

func init() {
	register(
		Entry{ReferenceInvalid, StageOCI, "reference is not valid",
			"Write a registry reference as HOST/REPO[:TAG][@sha256:HEX] (as oras does), or an OCI layout as PATH[:TAG][@sha256:HEX] with --oci-layout."},
		Entry{ReferenceNotDigest, StageOCI, "a digest reference is required",
			"Re-run with REF@sha256:… — the digest shown is what the tag resolves to now; a tag can move, a digest cannot."},
		Entry{ArtifactNotFound, StageOCI, "artifact not found",
			"Check the reference; `oa push` prints the REF@sha256:… of what it pushed."},
		Entry{ArtifactNotWorker, StageOCI, "artifact is not an oa worker",
			"The manifest must be an OCI image manifest with artifactType application/vnd.oa.worker.v1, as `oa push` writes."},
		Entry{ArtifactLayersInvalid, StageOCI, "artifact layers do not match its Worker IR",
			"A worker artifact has exactly one IR layer and one layer per evaluator component and skill doc named in the IR; re-push it with `oa push`."},
		Entry{LayerDigestMismatch, StageOCI, "content does not match its digest",
			"A blob or manifest was changed after it was written; do not trust this copy. Pull or copy the artifact again from its source."},
		Entry{IRAnnotationMismatch, StageOCI, "IR digest annotation does not match the IR layer",
			"The manifest's dev.oa.worker.ir.digest annotation must equal the digest of its IR layer; re-push the artifact with `oa push`."},
		Entry{KeyInvalid, StageOCI, "key file is not usable",
			"Pass a key in cosign's format: `oa keys generate` or `cosign generate-key-pair` writes one (.key is the encrypted private key, .pub the public key)."},
		Entry{KeyPasswordWrong, StageOCI, "wrong password for the private key",
			"Set COSIGN_PASSWORD to the key's password (or type it at the prompt)."},
		Entry{SignatureMissing, StageOCI, "no publisher signature",
			"The publisher signs the exact digest: `oa sign --key KEY REF@sha256:…` (or `cosign sign --key`)."},
		Entry{SignatureUntrusted, StageOCI, "no signature verifies with the trusted publisher key",
			"The signature was made by another key or does not match its payload. Get the artifact signed by the trusted publisher key, or trust the key that signed it."},
		Entry{SignatureWrongSubject, StageOCI, "signature is for another digest",
			"The signature's payload names a different manifest digest; it does not vouch for these bytes. Sign this exact digest."},
		Entry{AttestationMissing, StageOCI, "no conformance attestation",
			"An independent conformance authority attests the exact digest: `oa attest --key AUTHORITY_KEY REF@sha256:…`."},
		Entry{AttestationUntrusted, StageOCI, "no attestation verifies with the trusted authority key",
			"The attestation was made by another key or its envelope was changed. Get it attested by a trusted conformance authority."},
		Entry{AttestationWrongSubject, StageOCI, "attestation is for another digest",
			"The in-toto statement's subject names a different manifest digest; attest this exact digest."},
		Entry{AttestationByPublisher, StageOCI, "attestation signed by the publisher's own key",
			"Conformance must be attested by an authority independent of the publisher; use the authority's key, never the publisher's."},
		Entry{AttestationPredicateBad, StageOCI, "attestation predicate is not an oa conformance report",
			"The statement must carry predicate type https://oa.dev/attestations/conformance/v1 with a conformance report in which every check passed."},
		Entry{AttestationIRMismatch, StageOCI, "attestation's workerIrDigest differs from the artifact's IR",
			"The attestation vouches for another Worker IR; attest this artifact again."},
		Entry{ConformanceFailed, StageOCI, "conformance check failed",
			"Nothing was attested. Fix what the named check reports in the bundle, compile and push again, then attest the new digest."},
	)
}
