// Package secretfile opens the files a connection's secrets are read from
// (a stdio server's NAME=VALUE file, a remote server's header value or
// bearer token) and holds each to what ssh holds a private key to: a
// regular file, mode exactly 0600, owned by the user oa runs as. It is
// shared by connector/proc and connector/remote, below both.
//
// Refusals name the rule (connector_secret_unavailable), never the path or
// the contents.
package secretfile

import (
	"os"
	"syscall"

	"github.com/oa-dev/oa/blocking"
)

// Open opens the secret file at path and checks the open file (not the
// path), so the file judged is the file read. The caller closes it.
func Open(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, blocking.New(blocking.ConnectorSecretUnavailable, "the secret file cannot be opened")
	}
	if err := check(f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// check holds the open file f to the rules of a secret file.
func check(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return blocking.New(blocking.ConnectorSecretUnavailable, "the secret file cannot be read")
	}
	if !fi.Mode().IsRegular() {
		return blocking.New(blocking.ConnectorSecretUnavailable, "the secret file is not a regular file")
	}
	if fi.Mode().Perm() != 0o600 {
		return blocking.New(blocking.ConnectorSecretUnavailable, "the secret file must have mode 0600")
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return blocking.New(blocking.ConnectorSecretUnavailable, "the secret file is not owned by the user oa runs as")
	}
	return nil
}
