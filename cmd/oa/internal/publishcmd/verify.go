package publishcmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/cmd/oa/internal/cli"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/signing"
)

func newVerifyCmd() *cobra.Command {
	var refs cli.RefFlags
	var signers cli.SignerFlags
	cmd := &cobra.Command{
		Use:   "verify REF@sha256:… --publisher-key P.pub|--certificate-identity[-regexp] ID --certificate-oidc-issuer[-regexp] ISS --trusted-root FILE --authority-key A.pub|--authority-certificate-identity[-regexp] ID --authority-certificate-oidc-issuer[-regexp] ISS",
		Short: "Verify an artifact's integrity chain: artifact, IR, signature, attestation",
		Long: `Verify checks each link of the artifact's chain and reports every one: the
artifact and every blob against its digest; the Worker IR against the IR
annotation and the layers; the publisher signature with the publisher key;
and the conformance attestation with the authority key, which must not be the
publisher's, for this digest and this IR, with every check passed. Each kind
of tampering has its own blocking code. Nothing online is contacted.

A publisher who signs without a key (a short-lived certificate, as cosign
and GitHub Actions do by default) is trusted by certificate identity
instead of --publisher-key, with the meaning of cosign's flags:
--certificate-identity or --certificate-identity-regexp (the Subject
Alternative Name), --certificate-oidc-issuer or
--certificate-oidc-issuer-regexp (extension 1.3.6.1.4.1.57264.1.8), and
--trusted-root, a sigstore trusted_root.json. The certificate must chain
to a CA of the trusted root, and a verified transparency-log time or a
timestamp of a trusted authority must prove the signature was made while
the certificate was valid; --certificate-valid-now accepts a certificate
valid now instead (private CAs with long-lived certificates).

An authority that attests without a key is trusted the same way with
the same flags prefixed "authority-" (--authority-certificate-identity,
--authority-certificate-oidc-issuer, …); --authority-trusted-root
defaults to --trusted-root.`,
		Args: cli.WantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			publisher, authority, err := signers.Verifiers()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			rel, err := refs.Resolve(ctx, args[0])
			if err != nil {
				return err
			}
			ref := rel.Ref
			chain := signing.VerifyChain(ctx, rel, publisher, authority)
			if cli.WantJSON(cmd) {
				if err := cli.PrintJSON(cmd.OutOrStdout(), map[string]any{"reference": ref.String(), "verified": chain.Err() == nil, "links": chain.Links}); err != nil {
					return err
				}
			} else {
				printChain(cmd, ref, chain)
			}
			return chain.Err()
		},
	}
	refs.Register(cmd)
	signers.Register(cmd)
	return cmd
}

func printChain(cmd *cobra.Command, ref oci.Ref, chain *signing.Chain) {
	out := cmd.OutOrStdout()
	fmt.Fprintln(out, ref.String())
	for i, l := range chain.Links {
		branch := "├──"
		if i == len(chain.Links)-1 {
			branch = "└──"
		}
		state := "✓"
		if !l.OK() {
			state = "✗ " + string(l.Refusal.Code)
		}
		form := ""
		if l.Form != "" {
			form = "  (" + l.Form + ")"
		}
		what := l.Digest
		if l.Signer != nil {
			what = "signed by " + l.Signer.String()
		}
		fmt.Fprintf(out, "%s %-24s %s  %s%s\n", branch, l.Name, state, what, form)
	}
}
