package boundedfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ReadRegular reads the regular file at path, at most max bytes. The
// operator names the file, so a link is followed, but what it names must
// be a regular file: a named pipe is never waited on and a device never
// read. The error names the rule, never the path, for a refusal's detail.
// It is the reader of the files an operator names: configuration files,
// a local IR file, a registry's CA file.
func ReadRegular(path string, max int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errors.New("no file at this path")
	}
	if err != nil {
		return nil, errors.New("the file cannot be opened")
	}
	defer f.Close()
	info, err := f.Stat()
	switch {
	case err != nil:
		return nil, errors.New("the file cannot be read")
	case !info.Mode().IsRegular():
		return nil, errors.New("not a regular file")
	case info.Size() > max:
		return nil, fmt.Errorf("the file holds more than %d bytes", max)
	}
	b, err := readSized(io.LimitReader(f, max+1), info.Size())
	switch {
	case err != nil:
		return nil, errors.New("the file cannot be read")
	case int64(len(b)) > max:
		return nil, fmt.Errorf("the file holds more than %d bytes", max)
	}
	return b, nil
}

// readSized reads r to its end into a buffer sized for size bytes (plus
// one, to see a file that grew while read), as os.ReadFile does: a large
// file is read into one buffer instead of one that doubles its way up to
// it. r bounds how much is read.
func readSized(r io.Reader, size int64) ([]byte, error) {
	b := make([]byte, 0, size+1)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}
