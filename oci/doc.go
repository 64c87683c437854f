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
//
// Registry transport (transport.go): one pooled http.Transport and one
// oras-go auth.Client (token cache, Docker-config credentials) per process
// and TLS setting. OpenOptions mirrors oras's --plain-http, --ca-file and
// --insecure; a loopback registry with no scheme chosen is probed once. Every
// request is held to Limits.RequestTimeout and the operation's deadline, and
// 401/403, dial, DNS and certificate failures become registry_* codes naming
// the host only. Every read is held to Limits (from the host policy's limits
// section): descriptors checked before reading, at most their size read, size
// and digest verified.
//
// Fetch checks the manifest's descriptors, reads the IR alone, holds it to
// the SchemaCheck its caller must pass (schemas.CheckFetchedIR: canonical,
// strict, #Worker; a nil check refuses before anything is read), and checks
// layer count and sizes against the IR's parts before any other layer is
// read. The check is passed in so that oci loads no CUE (issue 42;
// TestOCIDoesNotLoadCUE), and package schemas' TestEveryFetchChecksTheSchema
// holds every caller to schemas.CheckFetchedIR. FetchBound binds every layer but the IR
// by digest and size without downloading it (the host stages). PlanCopy and
// Copy read, bound and digest-check everything cosign stores for an artifact
// before anything is written. Referrers, ReadCosignManifest and
// FetchReferenced are the bounded discovery package signing reads through.
// Keep and OpenKept (kept.go) write and read a host's store of releases, a
// layout where a blob already present is checked again before it is
// trusted and a damaged one replaced.
// oci imports neither the compiler nor cosign or sigstore, nor CUE.
package oci
