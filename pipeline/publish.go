// Package pipeline is the library's front door: the stage sequences that
// the CLI, the demo, the quickstart and the test hosts would otherwise each
// rebuild. Publish is the publisher's half (compile → push → sign →
// conformance-gated attest); PrepareHost is the operator's half (admit →
// signed registry → verified connections → resolve → bind); Pull writes a
// verified artifact into a folder.
//
// It sits after every stage it calls (compiler, oci, admit, resolve,
// connection, bind, and harness's Stage) and before the coordinator,
// which it never imports; no stage imports it. Each step is the stage's
// own call, nothing less: a refusal from any of them is returned as is.
//
// PrepareHost's SetUpHost writes and signs the starter registry (never over
// one: host_exists) and adds and verifies each connection before
// bind.ResolveAndBind; Pull stages the folder with atomicfile and refuses
// pull_output_not_owned. NewKeys makes a key pair in cosign's format.
package pipeline

import (
	"context"

	"github.com/oa-dev/oa/compiler"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/schemas"
	"github.com/oa-dev/oa/signing"
)

// Keys is a key pair in cosign's format: a publisher's or an authority's.
type Keys struct {
	Signer *signing.Signer
	Public []byte
}

// NewKeys makes a key pair with no password (the demo's and the tests').
func NewKeys() (Keys, error) {
	priv, pub, err := signing.GenerateKeys(nil)
	if err != nil {
		return Keys{}, err
	}
	s, err := signing.LoadSigner(priv, nil)
	return Keys{s, pub}, err
}

// Published is a release as published: pushed, signed and attested.
type Published struct {
	// Release is the release as the host stages read it: its Ref pinned
	// to the pushed digest (for a release in a host's OCI layout,
	// NAME@sha256:… as the oa CLI reads it under the home), the Target
	// it was pushed to and its manifest's Descriptor.
	oci.Release
	// IR is the workerIrDigest.
	IR string
}

// Publish compiles the bundle in dir and publishes it to the OCI layout
// under home (PublishCompiled).
func Publish(ctx context.Context, home, dir string, publisher, authority *signing.Signer) (*Published, error) {
	res, err := compiler.Compile(dir)
	if err != nil {
		return nil, err
	}
	return PublishCompiled(ctx, home, res, publisher, authority)
}

// PublishCompiled pushes a compiled bundle to the OCI layout under home
// (created when missing), signs it as publisher and attests it as
// authority; Ref is NAME@sha256:…, as the oa CLI reads it under home.
func PublishCompiled(ctx context.Context, home string, res *compiler.Result, publisher, authority *signing.Signer) (*Published, error) {
	ref, err := oci.ParseRef(res.Worker.Name, oci.RefOptions{Home: home})
	if err != nil {
		return nil, err
	}
	// Read back under the limits of the host under home, if it is one:
	// what it publishes it can also admit.
	opts, err := host.ReleaseOptions(home, oci.OpenOptions{Create: true})
	if err != nil {
		return nil, err
	}
	target, err := oci.Open(ctx, ref, opts)
	if err != nil {
		return nil, err
	}
	return PublishTo(ctx, target, ref, res, publisher, authority)
}

// PublishTo pushes a compiled bundle to target (which ref names: a layout
// or a registry repository), signs it as the publisher and attests it as
// the authority through the conformance gate (signing.AttestConformance: a
// failing report refuses conformance_failed and attests nothing); Ref is
// ref pinned to the pushed digest.
func PublishTo(ctx context.Context, target oci.Target, ref oci.Ref, res *compiler.Result, publisher, authority *signing.Signer) (*Published, error) {
	desc, err := oci.Push(ctx, target, res.Worker, res.IR, res.Worker.Version, oci.PackOptions{})
	if err != nil {
		return nil, err
	}
	if _, err := signing.Sign(ctx, target, desc, signing.WriteOptions{Signer: publisher, Repository: ref.Name()}); err != nil {
		return nil, err
	}
	art, err := oci.Fetch(ctx, target, desc, schemas.CheckFetchedIR)
	if err != nil {
		return nil, err
	}
	if _, err := signing.AttestConformance(ctx, target, art, authority.KeyID(), signing.WriteOptions{Signer: authority, Repository: ref.Name()}); err != nil {
		return nil, err
	}
	return &Published{Release: oci.Release{Ref: ref.WithDigest(desc.Digest), Target: target, Descriptor: desc}, IR: res.Digest}, nil
}
