package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/signing"
)

func newVerifyCmd() *cobra.Command {
	var refs refFlags
	var publisherKey, authorityKey string
	var signer identityFlags
	cmd := &cobra.Command{
		Use:   "verify REF@sha256:… --publisher-key P.pub|--certificate-identity[-regexp] ID --certificate-oidc-issuer[-regexp] ISS --trusted-root FILE --authority-key A.pub",
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
valid now instead (private CAs with long-lived certificates).`,
		Args: wantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			publisher, err := signer.verifier(publisherKey)
			if err != nil {
				return err
			}
			authority, err := loadVerifier(authorityKey)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			ref, target, desc, err := refs.resolvePinnedRead(ctx, args[0])
			if err != nil {
				return err
			}
			chain := signing.VerifyChain(ctx, target, desc, publisher, authority)
			if wantJSON(cmd) {
				if err := printJSON(cmd.OutOrStdout(), map[string]any{"reference": ref.String(), "verified": chain.Err() == nil, "links": chain.Links}); err != nil {
					return err
				}
			} else {
				printChain(cmd, ref, chain)
			}
			return chain.Err()
		},
	}
	refs.register(cmd)
	cmd.Flags().StringVar(&publisherKey, "publisher-key", "", "the trusted publisher's public key")
	cmd.Flags().StringVar(&authorityKey, "authority-key", "", "the trusted conformance authority's public key")
	signer.register(cmd, "publisher-key")
	_ = cmd.MarkFlagRequired("authority-key")
	return cmd
}

// identityFlags are cosign's certificate identity flags, naming a signer
// trusted by identity instead of by key.
type identityFlags struct {
	id          signing.Identity
	trustedRoot string
	validNow    bool
}

// register adds the flags to cmd: one of keyFlag or an identity is
// required, never both.
func (f *identityFlags) register(cmd *cobra.Command, keyFlag string) {
	fl := cmd.Flags()
	fl.StringVar(&f.id.Subject, "certificate-identity", "", "trust the signer whose certificate names this identity (Subject Alternative Name)")
	fl.StringVar(&f.id.SubjectRegexp, "certificate-identity-regexp", "", "trust the signer whose certificate identity matches this regular expression (unanchored)")
	fl.StringVar(&f.id.Issuer, "certificate-oidc-issuer", "", "the OIDC issuer the signer's certificate must name")
	fl.StringVar(&f.id.IssuerRegexp, "certificate-oidc-issuer-regexp", "", "a regular expression the certificate's OIDC issuer must match (unanchored)")
	fl.StringVar(&f.trustedRoot, "trusted-root", "", "the sigstore trusted_root.json of the signer's CA, transparency logs and timestamp authorities")
	fl.BoolVar(&f.validNow, "certificate-valid-now", false, "accept a certificate valid now when nothing proves when it signed (private CAs)")
	cmd.MarkFlagsOneRequired(keyFlag, "certificate-identity", "certificate-identity-regexp")
	cmd.MarkFlagsMutuallyExclusive(keyFlag, "certificate-identity", "certificate-identity-regexp")
	cmd.MarkFlagsMutuallyExclusive(keyFlag, "certificate-oidc-issuer", "certificate-oidc-issuer-regexp")
	cmd.MarkFlagsMutuallyExclusive(keyFlag, "trusted-root")
	cmd.MarkFlagsMutuallyExclusive(keyFlag, "certificate-valid-now")
}

// verifier is the key at keyPath, or else the identity the flags name.
func (f *identityFlags) verifier(keyPath string) (*signing.Verifier, error) {
	if keyPath != "" {
		return loadVerifier(keyPath)
	}
	if err := f.id.Check(); err != nil {
		return nil, err
	}
	if f.trustedRoot == "" {
		return nil, blocking.New(blocking.IdentityInvalid, "--trusted-root is required with a certificate identity")
	}
	tr, err := signing.ReadTrustedRoot(f.trustedRoot)
	if err != nil {
		return nil, err
	}
	return signing.NewIdentityVerifier(f.id, tr, signing.IdentityOptions{CertificateValidNow: f.validNow})
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
