package publishcmd

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/cmd/oa/internal/cli"
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
		Args: cli.WantArgs(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			priv, pub := prefix+".key", prefix+".pub"
			for _, p := range []string{priv, pub} {
				if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
					return cli.Usage(fmt.Errorf("%s exists; generate never overwrites a key, choose another --output-key-prefix", p))
				}
			}
			password, err := signing.ReadPassword(cli.PromptPassword(true))
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
			if cli.WantJSON(cmd) {
				return cli.PrintJSON(cmd.OutOrStdout(), map[string]string{"privateKey": priv, "publicKey": pub, "keyId": v.KeyID()})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s and %s (key id %s)\n", priv, pub, v.KeyID())
			return nil
		},
	}
	gen.Flags().StringVar(&prefix, "output-key-prefix", "cosign", "file name prefix of the key pair")
	keys.AddCommand(gen)
	return keys
}
