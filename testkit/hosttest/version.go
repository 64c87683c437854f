package hosttest

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/oa-dev/oa/examples"
	"github.com/oa-dev/oa/pipeline"
)

// PublishVersion publishes the clinic example at version into the host's
// layout, signed and attested by the same publisher and authority as the
// host's first release; it admits nothing.
func (h *Host) PublishVersion(version string) *pipeline.Published {
	h.T.Helper()
	dir := filepath.Join(h.T.TempDir(), "bundle")
	if err := examples.Write(examples.Default, dir); err != nil {
		h.T.Fatal(err)
	}
	path := filepath.Join(dir, "worker.cue")
	src, err := os.ReadFile(path)
	if err != nil {
		h.T.Fatal(err)
	}
	const line = `version:  "1.2.0"`
	if !strings.Contains(string(src), line) {
		h.T.Fatalf("the clinic example no longer says %s", line)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(src), line, `version:  "`+version+`"`, 1)), 0o644); err != nil {
		h.T.Fatal(err)
	}
	publisher, authority, err := sharedKeys()
	if err != nil {
		h.T.Fatal(err)
	}
	rel, err := pipeline.Publish(context.Background(), h.Home, dir, publisher.Signer, authority.Signer)
	if err != nil {
		h.T.Fatal(err)
	}
	return rel
}
