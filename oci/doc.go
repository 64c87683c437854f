// Package oci turns compiled Worker IR into an immutable OCI artifact and
// back, and moves it between OCI image layouts and registries with what
// cosign stores beside it (its `.sig` and `.att` tags, sigstore bundle
// referrers). Making and verifying those signatures and attestations is
// package signing's; oci only finds, bounds, reads and copies them.
//
// The artifact is an image-spec v1.1 manifest with artifactType
// application/vnd.oa.worker.v1, the empty config and one layer per part:
// the canonical IR, each evaluator component and each persona or skill
// document, every layer named in the IR by digest. Nothing in it depends on
// the time or the machine unless SOURCE_DATE_EPOCH asks for a timestamp, so
// pushing the same bundle twice gives the same manifest digest.
//
// Targets follow the oras CLI: a registry reference HOST/REPO[:TAG][@DIGEST],
// or an OCI image layout. A reference without a registry host names a
// layout under $OA_HOME/oci, the embedded default that needs no server.
// Transfers use oras-go; every byte read is bounded and checked against
// its digest.
package oci
