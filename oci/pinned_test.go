package oci

import (
	"context"
	"strings"
	"testing"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/examples"
	"github.com/oa-dev/oa/schemas"
	"github.com/oa-dev/oa/testkit/exampletest"
)

// TestOpenPinned: a digest reference opens and resolves to its manifest,
// read through a target that remembers it; a tag reference is refused
// reference_not_digest, naming the digest the tag resolves to.
func TestOpenPinned(t *testing.T) {
	ctx := context.Background()
	res := exampletest.Compile(t, examples.Default)
	store, dir := newLayout(t)
	desc, err := Push(ctx, store, res.Worker, res.IR, "v1", PackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ref := Ref{Layout: dir, LayoutPath: true, Repository: "test"}
	rel, err := OpenPinned(ctx, ref.WithDigest(desc.Digest), OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rel.Descriptor.Digest != desc.Digest || rel.Ref.Digest != desc.Digest {
		t.Fatalf("opened %+v, want %s", rel, desc.Digest)
	}
	if _, err := FetchBound(ctx, rel.Target, rel.Descriptor, schemas.CheckFetchedIR); err != nil {
		t.Fatalf("the pinned release does not read back: %v", err)
	}
	tagged := ref
	tagged.Tag = "v1"
	_, err = OpenPinned(ctx, tagged, OpenOptions{})
	wantCode(t, err, blocking.ReferenceNotDigest)
	if !strings.Contains(err.Error(), desc.Digest.String()) {
		t.Fatalf("the refusal does not name the digest the tag resolves to: %v", err)
	}
}
