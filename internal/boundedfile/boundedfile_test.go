package boundedfile_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/oa-dev/oa/internal/boundedfile"
)

// TestReadHoldsTheBound: a file of exactly the bound is read whole, one
// byte more is ErrTooLarge, a missing file is the open error.
func TestReadHoldsTheBound(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("12345"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := boundedfile.Read(path, 5); err != nil || string(b) != "12345" {
		t.Errorf("at the bound: %q, %v", b, err)
	}
	if _, err := boundedfile.Read(path, 4); !errors.Is(err, boundedfile.ErrTooLarge) {
		t.Errorf("over the bound: %v", err)
	}
	if _, err := boundedfile.Read(path+"-missing", 4); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
}

func ExampleRead() {
	path := filepath.Join(os.TempDir(), "boundedfile-example")
	_ = os.WriteFile(path, []byte("a key"), 0o600)
	defer os.Remove(path)
	b, err := boundedfile.Read(path, 1024)
	fmt.Println(string(b), err)
	_, err = boundedfile.Read(path, 2)
	fmt.Println(err == boundedfile.ErrTooLarge)
	// Output:
	// a key <nil>
	// true
}
