package main

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/oa-dev/oa/internal/testkit/registrytest"
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
// Content-Length for a blob or a manifest is shorter or longer than the descriptor's
// size is refused as tampering (exit 2, layer_digest_mismatch) by pull,
// verify and copy, and no raw transport text (oras-go's error, the URL) reaches
// the user.
func TestRegistryContentLengthMismatchIsRefused(t *testing.T) {
	reg := registrytest.Start(t)
	p := newPublisher(t)
	pinned := p.publish(reg.Host() + "/oa/clinic")
	// Not subtests: the publisher's helpers fail the test they were made with.
	for name, lie := range map[string]struct {
		kind  string
		delta int
	}{"blob shorter": {"/blobs/", -1}, "blob longer": {"/blobs/", 1}, "manifest shorter": {"/manifests/", -1}, "manifest longer": {"/manifests/", 1}} {
		lieAboutLength(reg, lie.kind, lie.delta)
		for _, args := range [][]string{
			{"pull", pinned, "-o", p.path("pulled-" + strings.ReplaceAll(name, " ", "-"))},
			{"verify", pinned, "--publisher-key", p.path("publisher.pub"), "--authority-key", p.path("authority.pub")},
			{"copy", pinned, "copied-" + strings.ReplaceAll(name, " ", "-")},
		} {
			msg := p.refused("layer_digest_mismatch", args...)
			for _, raw := range []string{"mismatch Content-Length", "http://", "/v2/", "GET"} {
				if strings.Contains(msg, raw) {
					t.Fatalf("%s: oa %s shows raw transport text %q:\n%s", name, args[0], raw, msg)
				}
			}
		}
	}
	reg.Lie(nil)
	// The registry telling the truth again, the same artifact pulls.
	p.ok("pull", pinned, "-o", p.path("pulled-truth"))
}
