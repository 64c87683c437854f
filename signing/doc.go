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
package signing
