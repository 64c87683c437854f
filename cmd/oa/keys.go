package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/signing"
)

func newKeysCmd() *cobra.Command {
	keys := &cobra.Command{Use: "keys", Short: "Manage signing keys (cosign's file format)"}
	var prefix string
	gen := &cobra.Command{
		Use:   "generate",
		Short: "Write an encrypted key pair PREFIX.key and PREFIX.pub in cosign's format",
		Long: `Generate writes an ECDSA P-256 key pair: PREFIX.key, the private key encrypted
with a password (ENCRYPTED SIGSTORE PRIVATE KEY, as cosign generate-key-pair
writes), and PREFIX.pub. The password comes from COSIGN_PASSWORD, or a prompt.
Existing files are never overwritten.`,
		Args: WantArgs(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			priv, pub := prefix+".key", prefix+".pub"
			for _, p := range []string{priv, pub} {
				if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
					return UsageError{fmt.Errorf("%s exists; generate never overwrites a key, choose another --output-key-prefix", p)}
				}
			}
			password, err := signing.ReadPassword(promptPassword(true))
			if err != nil {
				return err
			}
			privPEM, pubPEM, err := signing.GenerateKeys(password)
			if err != nil {
				return err
			}
			if err := os.WriteFile(priv, privPEM, 0o600); err != nil {
				return err
			}
			if err := os.WriteFile(pub, pubPEM, 0o644); err != nil {
				return err
			}
			v, err := signing.LoadVerifier(pubPEM)
			if err != nil {
				return err
			}
			if WantJSON(cmd) {
				return PrintJSON(cmd.OutOrStdout(), map[string]string{"privateKey": priv, "publicKey": pub, "keyId": v.KeyID()})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s and %s (key id %s)\n", priv, pub, v.KeyID())
			return nil
		},
	}
	gen.Flags().StringVar(&prefix, "output-key-prefix", "cosign", "file name prefix of the key pair")
	keys.AddCommand(gen)
	return keys
}

// promptPassword asks on the terminal, twice when confirming; without a
// terminal there is nobody to ask, which is a refusal naming the variable.
func promptPassword(confirm bool) func() ([]byte, error) {
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
			return nil, UsageError{errors.New("the passwords do not match")}
		}
		return pw, nil
	}
}

// loadSigner reads a cosign private key file and its password.
func loadSigner(path string) (*signing.Signer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, blocking.New(blocking.KeyInvalid, "the private key file cannot be read")
	}
	password, err := signing.ReadPassword(promptPassword(false))
	if err != nil {
		return nil, err
	}
	return signing.LoadSigner(b, password)
}

// loadVerifier reads a public key file.
func loadVerifier(path string) (*signing.Verifier, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, blocking.New(blocking.KeyInvalid, "the public key file cannot be read")
	}
	return signing.LoadVerifier(b)
}
