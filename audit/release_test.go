package audit

import (
	"context"
	"testing"

	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/schemas"
)

// TestBundleHoldsTheBoundRelease: an opened bundle holds one release, the
// audit manifest's subject in the bundle's layout, which is the release
// the host bound and reads whole there (the one the chain's and the
// plan's checks are given).
func TestBundleHoldsTheBoundRelease(t *testing.T) {
	f := newFixture(t)
	b := openWhole(t, f.bundle)
	if b.release.Descriptor.Digest != f.Release.Descriptor.Digest || b.host.ArtifactDigest != f.Release.Descriptor.Digest.String() {
		t.Fatalf("the bundle holds %s (host document %s); the host bound %s", b.release.Descriptor.Digest, b.host.ArtifactDigest, f.Release.Descriptor.Digest)
	}
	if _, err := oci.Fetch(context.Background(), b.release.Target, b.release.Descriptor, schemas.CheckFetchedIR); err != nil {
		t.Fatalf("the bundle's release does not read from its layout: %v", err)
	}
}
