// Package boundedfile reads a file the program was given, refusing one
// larger than a bound before holding more than the bound and one byte of
// it: what every reader of a key, a policy or a proof needs.
package boundedfile

import (
	"errors"
	"io"
	"os"
)

// ErrTooLarge is returned for a file larger than the bound.
var ErrTooLarge = errors.New("boundedfile: the file is larger than its bound")

// Read returns the contents of the file at path, or ErrTooLarge when it
// holds more than max bytes.
func Read(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, ErrTooLarge
	}
	return b, nil
}
