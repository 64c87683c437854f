package fleet

import (
	"context"

	"github.com/oa-dev/oa/internal/canonical"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/signing"
)

// PushSigned signs v's canonical JSON with key and pushes it under tag of
// repo as a document of artifactType: tests write what publishing never
// would (older lists, junk under a host's tag).
func PushSigned(ctx context.Context, repo, artifactType, tag string, v any, key *signing.Signer) error {
	ref, err := oci.ParseRef(repo, oci.RefOptions{})
	if err != nil {
		return err
	}
	target, err := oci.Open(ctx, ref, oci.OpenOptions{})
	if err != nil {
		return err
	}
	payload, err := canonical.Marshal(v)
	if err != nil {
		return err
	}
	sig, err := key.SignBytes(payload)
	if err != nil {
		return err
	}
	_, err = pushDocument(ctx, target, artifactType, tag, payload, sig, key.KeyID(), nil)
	return err
}

// Unbounded returns o allowed to publish a lifetime over MaxExpiry, as a
// publisher older than the bound could have (tests of what hosts and
// later publishes do with such a document).
func Unbounded(o Options) Options {
	o.unbounded = true
	return o
}

// ReadEnvelope reads and decodes the envelope under tag of repo as a host
// does, without verifying its signature, and returns it with its signed
// bytes: tests of what publishing wrote.
func ReadEnvelope(ctx context.Context, repo, tag string) (*Envelope, []byte, error) {
	ref, err := oci.ParseRef(repo, oci.RefOptions{})
	if err != nil {
		return nil, nil, err
	}
	target, err := oci.Open(ctx, ref, oci.OpenOptions{})
	if err != nil {
		return nil, nil, err
	}
	doc, err := readDocument(ctx, target, EnvelopeArtifactType, tag)
	if err != nil || doc == nil {
		return nil, nil, err
	}
	var env Envelope
	if err := doc.decode(&env); err != nil {
		return nil, nil, err
	}
	return &env, doc.Payload, nil
}
