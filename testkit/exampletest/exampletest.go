// Package exampletest compiles the embedded example bundles for tests
// (oci, signing, projection), so that each package does not write its own
// copy of the same few lines.
package exampletest

import (
	"path/filepath"
	"testing"

	"github.com/oa-dev/oa/compiler"
	"github.com/oa-dev/oa/examples"
)

// Compile writes the embedded example bundle name into a temporary folder
// of t and compiles it, failing t on any error.
func Compile(t testing.TB, name string) *compiler.Result {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := examples.Write(name, dir); err != nil {
		t.Fatal(err)
	}
	res, err := compiler.Compile(dir)
	if err != nil {
		t.Fatal(err)
	}
	return res
}
