package secretfile_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector/secretfile"
)

// TestOpenHoldsTheFileToItsRules: a 0600 regular file opens; a missing
// file, a folder or a file others may read is refused by rule, never
// naming the path.
func TestOpenHoldsTheFileToItsRules(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	if err := os.WriteFile(good, []byte("A=1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := secretfile.Open(good)
	if err != nil {
		t.Fatalf("a 0600 file: %v", err)
	}
	f.Close()
	loose := filepath.Join(dir, "loose")
	if err := os.WriteFile(loose, []byte("A=1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(loose, 0o644); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		filepath.Join(dir, "missing"): "the secret file cannot be opened",
		dir:                           "the secret file is not a regular file",
		loose:                         "the secret file must have mode 0600",
	} {
		_, err := secretfile.Open(path)
		rs := blocking.Refusals(err)
		if len(rs) != 1 || rs[0].Code != blocking.ConnectorSecretUnavailable || rs[0].Detail != want {
			t.Errorf("%s: got %v, want %q", filepath.Base(path), err, want)
		}
	}
}
