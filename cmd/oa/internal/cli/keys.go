package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"golang.org/x/term"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/signing"
)

// PromptPassword asks on the terminal, twice when confirming; without a
// terminal there is nobody to ask, which is a refusal naming the variable.
func PromptPassword(confirm bool) func() ([]byte, error) {
	return func() ([]byte, error) {
		fd := int(os.Stdin.Fd())
		if !term.IsTerminal(fd) {
			return nil, blocking.New(blocking.KeyPasswordMissing, "set %s", signing.PasswordEnv)
		}
		fmt.Fprint(os.Stderr, "Enter password for private key: ")
		pw, err := term.ReadPassword(fd)
		fmt.Fprintln(os.Stderr)
		if err != nil || !confirm {
			return pw, err
		}
		fmt.Fprint(os.Stderr, "Enter password for private key again: ")
		again, err := term.ReadPassword(fd)
		fmt.Fprintln(os.Stderr)
		if err != nil {
			return nil, err
		}
		if !bytes.Equal(pw, again) {
			return nil, Usage(errors.New("the passwords do not match"))
		}
		return pw, nil
	}
}

// LoadSigner reads a cosign private key file and its password.
func LoadSigner(path string) (*signing.Signer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, blocking.New(blocking.KeyInvalid, "the private key file cannot be read")
	}
	password, err := signing.ReadPassword(PromptPassword(false))
	if err != nil {
		return nil, err
	}
	return signing.LoadSigner(b, password)
}

// LoadVerifier reads a public key file.
func LoadVerifier(path string) (*signing.Verifier, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, blocking.New(blocking.KeyInvalid, "the public key file cannot be read")
	}
	return signing.LoadVerifier(b)
}
