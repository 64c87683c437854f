package cli

import (
	"os"
	"path/filepath"
	"testing"
)

// TestIsGoRunBuild: under go run the executable the client
// would start is deleted when go run ends (harness install refuses it);
// only that layout is such a build.
func TestIsGoRunBuild(t *testing.T) {
	if !IsGoRunBuild(filepath.Join(os.TempDir(), "go-build99", "b001", "exe", "oa")) || IsGoRunBuild("/usr/local/bin/oa") || IsGoRunBuild(filepath.Join(os.TempDir(), "go-build99", "b001", "oa.test")) {
		t.Fatal("IsGoRunBuild")
	}
}
