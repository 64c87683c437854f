package oci

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/oa-dev/oa/blocking"
)

// TestLocalRef: a repository's layout under home is that folder whatever
// the repository's first part looks like, and what the reference renders
// reads back as the same folder and digest, never as a registry. A
// repository ParseRef reads under home is rendered REPO@DIGEST as before.
func TestLocalRef(t *testing.T) {
	home := "/home/op/.oa"
	d := digest.Digest("sha256:ab" + strings.Repeat("0", 62))
	for _, c := range []struct {
		repo      string
		asPath    bool
		rendered  string
		layoutDir string
	}{
		{"oa/clinic", false, "oa/clinic@" + d.String(), "/home/op/.oa/oci/oa/clinic"},
		{"clinic-triage", false, "clinic-triage@" + d.String(), "/home/op/.oa/oci/clinic-triage"},
		{"oa.dev/clinic", true, "/home/op/.oa/oci/oa.dev/clinic@" + d.String(), "/home/op/.oa/oci/oa.dev/clinic"},
		{"localhost/clinic", true, "/home/op/.oa/oci/localhost/clinic@" + d.String(), "/home/op/.oa/oci/localhost/clinic"},
		{"ghcr.io/oa.dev/clinic", true, "/home/op/.oa/oci/ghcr.io/oa.dev/clinic@" + d.String(), "/home/op/.oa/oci/ghcr.io/oa.dev/clinic"},
	} {
		r, err := LocalRef(home, c.repo, d)
		if err != nil {
			t.Errorf("LocalRef(%q): %v", c.repo, err)
			continue
		}
		if r.Registry != "" || r.Repository != c.repo || r.Digest != d || r.Layout != c.layoutDir || r.LayoutPath != c.asPath || r.String() != c.rendered {
			t.Errorf("LocalRef(%q) = %+v, rendered %q", c.repo, r, r.String())
		}
		back, err := ParseRef(r.String(), RefOptions{Home: home, Layout: r.LayoutPath})
		if err != nil || back.Registry != "" || back.Layout != r.Layout || back.Digest != d {
			t.Errorf("LocalRef(%q) renders %q, read back as %+v, %v", c.repo, r.String(), back, err)
		}
		if !c.asPath && back != r {
			t.Errorf("LocalRef(%q) = %+v; ParseRef reads its rendering as %+v", c.repo, r, back)
		}
	}
	for _, bad := range []string{"", "Bad Name/x", "../escape", "oa//clinic", "oa.dev:5000/clinic"} {
		_, err := LocalRef(home, bad, d)
		wantCode(t, err, blocking.ReferenceInvalid)
	}
	for _, bad := range []digest.Digest{"", "sha256:xyz", digest.Digest("sha512:" + strings.Repeat("0", 128))} {
		_, err := LocalRef(home, "oa/clinic", bad)
		wantCode(t, err, blocking.ReferenceInvalid)
	}
}

// TestLocalRefOpensItsFolder: a layout opened for writing through a
// LocalRef whose repository reads as a host is made in home's layout
// folder, not reached as a registry.
func TestLocalRefOpensItsFolder(t *testing.T) {
	home := t.TempDir()
	r, err := LocalRef(home, "oa.dev/clinic", digest.FromString("release"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(context.Background(), r, OpenOptions{Create: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(home, "oci", "oa.dev", "clinic", "oci-layout")); err != nil {
		t.Fatalf("no layout in home's folder: %v", err)
	}
}
