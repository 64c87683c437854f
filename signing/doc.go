// Package signing holds oa's keys and everything made or checked with
// them: cosign key pairs (LoadSigner, LoadVerifier, GenerateKeys), a
// publisher's signature and an authority's conformance attestation over an
// artifact in both forms cosign writes (the `sha256-<hex>.sig` and `.att`
// tags, and sigstore bundle referrers), their offline verification as
// `cosign verify --key` and `cosign verify-attestation` do, the
// conformance checks an authority runs before it attests, and the
// verification of an artifact's whole integrity chain. Hosts and fleets
// sign and verify their own records (admissions, revocations, receipts,
// fleet documents) with the same keys (Signer.SignBytes,
// Verifier.VerifyBytes).
//
// It reads and writes through package oci, which bounds and digest-checks
// every byte; what signing adds is deciding what the bytes prove.
//
// Opened keys are remembered per process by their exact bytes and password,
// so scrypt is paid once per key. Sign and Attest take one WriteOptions
// (the signer, the repository naming the subject, the format): cosign's
// legacy tags by default, with Bundle cosign v3's default, a sigstore
// bundle referrer. AttestConformance is the gate every attester goes through: a
// failing report is refused (conformance_failed) with nothing written.
// CopySigned refuses copy_unsigned before anything is written. VerifyChain
// checks artifact, IR, signature and attestation, one link each with its
// form. Signers trusted by certificate identity (NewIdentityVerifier,
// LoadTrustedRoot) are checked by sigstore-go's verifier in the same
// VerifySignature and VerifyAttestation.
package signing
