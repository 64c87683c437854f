package oci

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/registry/remote/credentials"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/schemas"
)

// Short deadlines keep these tests fast; what they check is that the
// call returns, refused with the right code, never how long it took.
const (
	testRequestTimeout   = 300 * time.Millisecond
	testOperationTimeout = 400 * time.Millisecond
)

// silentListener accepts connections on loopback and never answers: no
// TLS handshake, no HTTP response. It closes when t ends.
func silentListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c) // kept open, never written to
			select {
			case <-done:
				return
			default:
			}
		}
	}()
	t.Cleanup(func() { close(done); ln.Close() })
	return ln.Addr().String()
}

// openShort opens host/repo with the test's short deadlines over opts.
func openShort(t *testing.T, host, repo string, opts OpenOptions) (Target, error) {
	t.Helper()
	opts.Credentials = credentials.NewMemoryStore()
	if opts.RequestTimeout == 0 {
		opts.RequestTimeout = testRequestTimeout
	}
	return Open(context.Background(), Ref{Registry: host, Repository: repo}, opts)
}

// TestSilentRegistryIsATimeout: a registry that accepts and never answers
// is registry_timeout naming the host, for the loopback scheme probe (no
// scheme given), for HTTPS and for plain HTTP, never a hang or raw text.
func TestSilentRegistryIsATimeout(t *testing.T) {
	host := silentListener(t)
	_, err := openShort(t, host, "oa/silent", OpenOptions{})
	wantRegistryCode(t, err, blocking.RegistryTimeout, host)
	for _, opts := range []OpenOptions{{PlainHTTP: true}, {HTTPS: true}} {
		target, err := openShort(t, host, "oa/silent", opts)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Resolve(context.Background(), target, "v1")
		wantRegistryCode(t, err, blocking.RegistryTimeout, host)
	}
}

// trickle answers with the headers of a body of n bytes, then sends one
// byte every interval until the client goes away.
func trickle(w http.ResponseWriter, req *http.Request, n int64, interval time.Duration) {
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", fmt.Sprint(n))
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	for range n {
		if _, err := w.Write([]byte{0}); err != nil {
			return
		}
		if f != nil {
			f.Flush()
		}
		select {
		case <-req.Context().Done():
			return
		case <-time.After(interval):
		}
	}
}

// TestTricklingRegistryIsATimeout: a registry that sends a blob one byte
// at a time is cut off by the request timeout, whatever the blob's size.
func TestTricklingRegistryIsATimeout(t *testing.T) {
	reg, _, desc, art := lyingRegistry(t)
	target, err := openShort(t, reg.Host(), "oa/lie", OpenOptions{PlainHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	irDesc := art.Manifest.Layers[0]
	reg.Lie(func(w http.ResponseWriter, req *http.Request) bool {
		if req.Method != http.MethodGet || !strings.HasSuffix(req.URL.Path, "/blobs/"+irDesc.Digest.String()) {
			return false
		}
		trickle(w, req, irDesc.Size, 100*time.Millisecond)
		return true
	})
	_, err = Fetch(context.Background(), target, desc, schemas.CheckFetchedIR)
	wantRegistryCode(t, err, blocking.RegistryTimeout, reg.Host())
}

// TestSlowRegistryMeetsTheOperationTimeout: requests that each finish
// within the request timeout but together outlast the operation timeout
// are refused at the operation's deadline.
func TestSlowRegistryMeetsTheOperationTimeout(t *testing.T) {
	reg, _, desc, _ := lyingRegistry(t)
	target, err := openShort(t, reg.Host(), "oa/lie", OpenOptions{PlainHTTP: true, RequestTimeout: time.Minute, OperationTimeout: testOperationTimeout})
	if err != nil {
		t.Fatal(err)
	}
	reg.Lie(func(_ http.ResponseWriter, req *http.Request) bool {
		select {
		case <-req.Context().Done():
		case <-time.After(150 * time.Millisecond):
		}
		return false
	})
	_, err = Fetch(context.Background(), target, desc, schemas.CheckFetchedIR)
	wantRegistryCode(t, err, blocking.RegistryTimeout, reg.Host())
	if !strings.Contains(blocking.Refusals(err)[0].Detail, "operation timeout") {
		t.Fatalf("not the operation timeout: %v", err)
	}
}

// endlessReferrers answers the referrers API for any subject with a page
// of one referrer of another type and a Link to a next page, for ever.
func endlessReferrers(w http.ResponseWriter, req *http.Request) bool {
	if req.Method != http.MethodGet || !strings.Contains(req.URL.Path, "/referrers/") {
		return false
	}
	page := 0
	fmt.Sscan(req.URL.Query().Get("page"), &page)
	other := digest.FromString(fmt.Sprint("other ", page))
	w.Header().Set("Content-Type", ocispec.MediaTypeImageIndex)
	w.Header().Set("Link", fmt.Sprintf(`<%s?page=%d>; rel="next"`, req.URL.Path, page+1))
	fmt.Fprintf(w, `{"schemaVersion":2,"mediaType":%q,"manifests":[{"mediaType":%q,"artifactType":"application/vnd.example.other","digest":%q,"size":100}]}`,
		ocispec.MediaTypeImageIndex, ocispec.MediaTypeImageManifest, other)
	return true
}

// TestEndlessReferrersPagesAreBounded: a referrers listing that never
// ends (every page names another page, of referrers that do not match) is
// referrers_too_many after a bounded number of pages.
func TestEndlessReferrersPagesAreBounded(t *testing.T) {
	reg, target, desc, _ := lyingRegistry(t)
	reg.Lie(endlessReferrers)
	reg.ResetCounters()
	_, err := Referrers(context.Background(), target, desc, BundleMediaType)
	wantCode(t, err, blocking.ReferrersTooMany)
	if n := reg.Requests(); n > maxReferrerPages+2 {
		t.Fatalf("%d requests for a bounded listing", n)
	}
}

// hugeIndex writes 20 MB of a valid-looking image index, without a
// Content-Length (chunked), or with one when sized.
func hugeIndex(w http.ResponseWriter, sized bool) {
	w.Header().Set("Content-Type", ocispec.MediaTypeImageIndex)
	head := fmt.Sprintf(`{"schemaVersion":2,"mediaType":%q,"annotations":{"pad":"`, ocispec.MediaTypeImageIndex)
	tail := `"},"manifests":[]}`
	pad := []byte(strings.Repeat("x", 64<<10))
	n := 20 << 20 / len(pad)
	if sized {
		w.Header().Set("Content-Length", fmt.Sprint(len(head)+n*len(pad)+len(tail)))
	}
	fmt.Fprint(w, head)
	for range n {
		if _, err := w.Write(pad); err != nil {
			return
		}
	}
	fmt.Fprint(w, tail)
}

// TestOversizedReferrersAnswerIsTooLarge: a referrers answer over the
// manifest limit is manifest_too_large, not a digest mismatch or a
// fault: through the referrers API (with and without a Content-Length),
// and through the referrers tag of a registry without the API.
func TestOversizedReferrersAnswerIsTooLarge(t *testing.T) {
	for _, tc := range []struct {
		name  string
		api   bool
		sized bool
	}{{"api", true, false}, {"api with length", true, true}, {"tag", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			reg, target, desc, _ := lyingRegistry(t)
			tag := "/manifests/" + strings.Replace(desc.Digest.String(), ":", "-", 1)
			reg.Lie(func(w http.ResponseWriter, req *http.Request) bool {
				switch {
				case strings.Contains(req.URL.Path, "/referrers/") && !tc.api:
					http.NotFound(w, req)
				case strings.Contains(req.URL.Path, "/referrers/") && req.Method == http.MethodGet,
					strings.HasSuffix(req.URL.Path, tag) && req.Method == http.MethodGet:
					hugeIndex(w, tc.sized)
				default:
					return false
				}
				return true
			})
			_, err := Referrers(context.Background(), target, desc, BundleMediaType)
			wantCode(t, err, blocking.ManifestTooLarge)
		})
	}
}

// TestTimeoutsFromLimitsAndOptions: the options' timeouts replace the
// limits', and zero ones take the defaults.
func TestTimeoutsFromLimitsAndOptions(t *testing.T) {
	got := OpenOptions{Limits: Limits{RequestTimeout: time.Second, OperationTimeout: time.Hour}, RequestTimeout: 2 * time.Second}.limits()
	if got.RequestTimeout != 2*time.Second || got.OperationTimeout != time.Hour {
		t.Fatalf("limits %+v", got)
	}
	if d := (OpenOptions{}).limits(); d.RequestTimeout != DefaultRequestTimeout || d.OperationTimeout != DefaultOperationTimeout {
		t.Fatalf("defaults %+v", d)
	}
}

// handshakeTimeout is an error like net/http's TLS handshake timeout.
type handshakeTimeout struct{}

func (handshakeTimeout) Error() string   { return "net/http: TLS handshake timeout" }
func (handshakeTimeout) Timeout() bool   { return true }
func (handshakeTimeout) Temporary() bool { return true }

// TestTransportTimeoutIsARefusal: a timeout the HTTP transport reports
// itself (its TLS handshake deadline) is registry_timeout naming the
// host, not a fault with the transport's text.
func TestTransportTimeoutIsARefusal(t *testing.T) {
	err := classify(fmt.Errorf("GET: %w", handshakeTimeout{}), "registry.example:5000")
	wantRegistryCode(t, err, blocking.RegistryTimeout, "registry.example:5000")
}
