package boundedfile

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestReadRegular: a regular file is read whole, up to and including
// max bytes; one byte more, a folder, a device and a FIFO (which would
// block a plain read) are refused with a message that names the rule and
// not the path.
func TestReadRegular(t *testing.T) {
	dir := t.TempDir()
	const max = 4096
	for _, size := range []int{0, 1, max - 1, max} {
		p := filepath.Join(dir, "ok")
		want := bytes.Repeat([]byte("x"), size)
		if err := os.WriteFile(p, want, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := ReadRegular(p, max)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%d bytes: read %d bytes, %v", size, len(got), err)
		}
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, bytes.Repeat([]byte("x"), max+1), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		big:                          "more than 4096 bytes",
		dir:                          "not a regular file",
		"/dev/zero":                  "not a regular file",
		fifo:                         "not a regular file",
		filepath.Join(dir, "absent"): "no file at this path",
	} {
		b, err := ReadRegular(path, max)
		if err == nil || !strings.Contains(err.Error(), want) || b != nil {
			t.Errorf("%s: %d bytes, %v; want a refusal saying %q", path, len(b), err, want)
		}
		if err != nil && strings.Contains(err.Error(), dir) {
			t.Errorf("%s: the refusal names the path: %v", path, err)
		}
	}
}

// TestReadSizedReadsPastAStaleSize: the size from Stat only sizes the
// buffer; a file that grew or shrank since is read as it is now.
func TestReadSizedReadsPastAStaleSize(t *testing.T) {
	data := bytes.Repeat([]byte("abc"), 1000)
	for _, size := range []int64{0, 10, int64(len(data)), int64(len(data)) * 2} {
		got, err := readSized(bytes.NewReader(data), size)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("size %d: %d bytes, %v", size, len(got), err)
		}
	}
}
