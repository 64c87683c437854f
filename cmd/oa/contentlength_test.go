package main

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/oa-dev/oa/registrytest"
)

// truthHeader marks the lying handler's own request for the real bytes.
const truthHeader = "X-Oa-Test-Truth"

// lieAboutLength makes reg answer every blob GET with the real bytes
// under a Content-Length delta bytes off (the body cut or padded to
// match), as a broken proxy or a hostile registry would.
func lieAboutLength(reg *registrytest.Registry, delta int) {
	reg.Lie(func(w http.ResponseWriter, req *http.Request) bool {
		if req.Method != http.MethodGet || !strings.Contains(req.URL.Path, "/blobs/sha256:") || req.Header.Get(truthHeader) != "" {
			return false
		}
		real, err := http.NewRequestWithContext(req.Context(), http.MethodGet, "http://"+reg.Host()+req.URL.Path, nil)
		if err != nil {
			return false
		}
		real.Header.Set(truthHeader, "1")
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
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusOK)
		w.Write(body)
		return true
	})
}

// TestRegistryContentLengthMismatchIsRefused: a registry whose
// Content-Length for a blob is shorter or longer than the descriptor's
// size is refused as tampering (exit 2, layer_digest_mismatch) by pull and
// verify, and no raw transport text (oras-go's error, the URL) reaches
// the user.
func TestRegistryContentLengthMismatchIsRefused(t *testing.T) {
	reg := registrytest.Start(t)
	p := newPublisher(t)
	pinned := p.publish(reg.Host() + "/oa/clinic")
	// Not subtests: the publisher's helpers fail the test they were made with.
	for name, delta := range map[string]int{"shorter": -1, "longer": 1} {
		lieAboutLength(reg, delta)
		for _, args := range [][]string{
			{"pull", pinned, "-o", p.path("pulled-" + name)},
			{"verify", pinned, "--publisher-key", p.path("publisher.pub"), "--authority-key", p.path("authority.pub")},
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
