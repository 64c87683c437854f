package oci_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/compiler"
	"github.com/oa-dev/oa/examples"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/pipeline"
	"github.com/oa-dev/oa/schemas"
	"github.com/oa-dev/oa/signing"
	"github.com/oa-dev/oa/testkit/registrytest"
)

// truthHeader marks the lying handler's own request for the real bytes.
const truthHeader = "X-Oa-Test-Truth"

// lieAboutLength makes reg answer every GET of a path holding kind
// ("/blobs/" or "/manifests/") and a digest with the real bytes under a
// Content-Length delta bytes off (the body cut or padded to match), as a
// broken proxy or a hostile registry would.
func lieAboutLength(reg *registrytest.Registry, kind string, delta int) {
	reg.Lie(func(w http.ResponseWriter, req *http.Request) bool {
		if req.Method != http.MethodGet || !strings.Contains(req.URL.Path, kind+"sha256:") || req.Header.Get(truthHeader) != "" {
			return false
		}
		real, err := http.NewRequestWithContext(req.Context(), http.MethodGet, "http://"+reg.Host()+req.URL.Path, nil)
		if err != nil {
			return false
		}
		real.Header.Set(truthHeader, "1")
		real.Header.Set("Accept", req.Header.Get("Accept"))
		resp, err := http.DefaultClient.Do(real)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			return false
		}
		if delta < 0 {
			body = body[:max(0, len(body)+delta)]
		} else {
			body = append(body, bytes.Repeat([]byte{0}, delta)...)
		}
		for _, h := range []string{"Content-Type", "Docker-Content-Digest"} {
			w.Header().Set(h, resp.Header.Get(h))
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusOK)
		w.Write(body)
		return true
	})
}

// TestRegistryContentLengthMismatchIsRefused: a registry whose
// Content-Length for a blob or a manifest is shorter or longer than the
// descriptor's size is refused as tampering (layer_digest_mismatch) by
// each read of a release — the fetch `oa pull` makes, the chain `oa verify`
// checks and the copy `oa copy` makes — and no raw transport text
// (oras-go's error, the URL) is in the refusal.
func TestRegistryContentLengthMismatchIsRefused(t *testing.T) {
	ctx := context.Background()
	reg := registrytest.Start(t)
	rel, publisher, authority := publishSigned(t, reg.Host()+"/oa/clinic:v1")
	pinned := rel.Ref
	reads := map[string]func() error{
		"fetch": func() error {
			r, err := oci.OpenPinned(ctx, pinned, oci.OpenOptions{})
			if err != nil {
				return err
			}
			_, err = oci.Fetch(ctx, r.Target, r.Descriptor, schemas.CheckFetchedIR)
			return err
		},
		"verify": func() error {
			r, err := oci.OpenPinned(ctx, pinned, oci.OpenOptions{})
			if err != nil {
				return err
			}
			return signing.VerifyChain(ctx, r, publisher, authority).Err()
		},
		"copy": func() error {
			src, err := oci.Open(ctx, pinned, oci.OpenOptions{})
			if err != nil {
				return err
			}
			desc, err := oci.Resolve(ctx, src, pinned.Reference())
			if err != nil {
				return err
			}
			art, err := oci.Fetch(ctx, src, desc, schemas.CheckFetchedIR)
			if err != nil {
				return err
			}
			dstRef, err := oci.ParseRef(filepath.Join(t.TempDir(), "copy")+":v1", oci.RefOptions{Layout: true})
			if err != nil {
				t.Fatal(err)
			}
			dst, err := oci.Open(ctx, dstRef, oci.OpenOptions{Create: true})
			if err != nil {
				t.Fatal(err)
			}
			_, err = signing.CopySigned(ctx, src, dst, art.Descriptor, signing.CopyOptions{Tag: "v1"})
			return err
		},
	}
	for name, lie := range map[string]struct {
		kind  string
		delta int
	}{"blob shorter": {"/blobs/", -1}, "blob longer": {"/blobs/", 1}, "manifest shorter": {"/manifests/", -1}, "manifest longer": {"/manifests/", 1}} {
		lieAboutLength(reg, lie.kind, lie.delta)
		for read, f := range reads {
			err := f()
			if !blocking.Has(err, blocking.LayerDigestMismatch) {
				t.Fatalf("%s: %s gave %v, want layer_digest_mismatch", name, read, err)
			}
			for _, raw := range []string{"mismatch Content-Length", "http://", "/v2/", "GET"} {
				if strings.Contains(err.Error(), raw) {
					t.Fatalf("%s: %s shows raw transport text %q:\n%v", name, read, raw, err)
				}
			}
		}
	}
	reg.Lie(nil)
	// The registry telling the truth again, the same release reads.
	if err := reads["fetch"](); err != nil {
		t.Fatalf("fetch from an honest registry: %v", err)
	}
}

// publishSigned compiles the default example and publishes it to ref,
// signed and attested, returning the verifiers of both keys.
func publishSigned(t *testing.T, ref string) (*pipeline.Published, *signing.Verifier, *signing.Verifier) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	if err := examples.Write(examples.Default, dir); err != nil {
		t.Fatal(err)
	}
	res, err := compiler.Compile(dir)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := pipeline.NewKeys()
	if err != nil {
		t.Fatal(err)
	}
	auth, err := pipeline.NewKeys()
	if err != nil {
		t.Fatal(err)
	}
	r, err := oci.ParseRef(ref, oci.RefOptions{})
	if err != nil {
		t.Fatal(err)
	}
	target, err := oci.Open(ctx, r, oci.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rel, err := pipeline.PublishTo(ctx, target, r, res, pub.Signer, auth.Signer)
	if err != nil {
		t.Fatal(err)
	}
	return rel, pub.Signer.Verifier(), auth.Signer.Verifier()
}
