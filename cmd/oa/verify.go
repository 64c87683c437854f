package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/signing"
)

func newVerifyCmd() *cobra.Command {
	var refs RefFlags
	var signers signerFlags
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
		Args: WantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			publisher, authority, err := signers.verifiers()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			ref, target, desc, err := refs.resolvePinnedRead(ctx, args[0])
			if err != nil {
				return err
			}
			chain := signing.VerifyChain(ctx, target, desc, publisher, authority)
			if WantJSON(cmd) {
				if err := PrintJSON(cmd.OutOrStdout(), map[string]any{"reference": ref.String(), "verified": chain.Err() == nil, "links": chain.Links}); err != nil {
					return err
				}
			} else {
				printChain(cmd, ref, chain)
			}
			return chain.Err()
		},
	}
	refs.register(cmd)
	signers.register(cmd)
	return cmd
}

// identityFlags are cosign's certificate identity flags, naming a signer
// trusted by identity instead of by key. The publisher's flags are
// cosign's names; an authority's the same names prefixed "authority-".
type identityFlags struct {
	prefix      string
	id          signing.Identity
	trustedRoot string
	validNow    bool
	// shared is another identityFlags whose trusted root this one uses
	// when it names none (the authority may share the publisher's
	// --trusted-root).
	shared *identityFlags
}

// register adds the flags to cmd, each name prefixed by f.prefix: one of
// keyFlag or an identity is required, never both.
func (f *identityFlags) register(cmd *cobra.Command, keyFlag string) {
	fl, n := cmd.Flags(), func(name string) string { return f.prefix + name }
	who := "signer"
	if f.prefix != "" {
		who = strings.TrimSuffix(f.prefix, "-")
	}
	fl.StringVar(&f.id.Subject, n("certificate-identity"), "", "trust the "+who+" whose certificate names this identity (Subject Alternative Name)")
	fl.StringVar(&f.id.SubjectRegexp, n("certificate-identity-regexp"), "", "trust the "+who+" whose certificate identity matches this regular expression (unanchored)")
	fl.StringVar(&f.id.Issuer, n("certificate-oidc-issuer"), "", "the OIDC issuer the "+who+"'s certificate must name")
	fl.StringVar(&f.id.IssuerRegexp, n("certificate-oidc-issuer-regexp"), "", "a regular expression the "+who+"'s certificate OIDC issuer must match (unanchored)")
	rootHelp := "the sigstore trusted_root.json of the " + who + "'s CA, transparency logs and timestamp authorities"
	if f.shared != nil {
		rootHelp += " (default: --" + f.shared.prefix + "trusted-root)"
	}
	fl.StringVar(&f.trustedRoot, n("trusted-root"), "", rootHelp)
	fl.BoolVar(&f.validNow, n("certificate-valid-now"), false, "accept a "+who+"'s certificate valid now when nothing proves when it signed (private CAs)")
	cmd.MarkFlagsOneRequired(keyFlag, n("certificate-identity"), n("certificate-identity-regexp"))
	cmd.MarkFlagsMutuallyExclusive(keyFlag, n("certificate-identity"), n("certificate-identity-regexp"))
	cmd.MarkFlagsMutuallyExclusive(keyFlag, n("certificate-oidc-issuer"), n("certificate-oidc-issuer-regexp"))
	cmd.MarkFlagsMutuallyExclusive(keyFlag, n("trusted-root"))
	cmd.MarkFlagsMutuallyExclusive(keyFlag, n("certificate-valid-now"))
}

// verifier is the key at keyPath, or else the identity the flags name.
func (f *identityFlags) verifier(keyPath string) (*signing.Verifier, error) {
	if keyPath != "" {
		return loadVerifier(keyPath)
	}
	if err := f.id.Check(); err != nil {
		return nil, err
	}
	rootPath := f.trustedRoot
	if rootPath == "" && f.shared != nil {
		rootPath = f.shared.trustedRoot
	}
	if rootPath == "" {
		return nil, blocking.New(blocking.IdentityInvalid, "--%strusted-root is required with a certificate identity", f.prefix)
	}
	tr, err := signing.ReadTrustedRoot(rootPath)
	if err != nil {
		return nil, err
	}
	return signing.NewIdentityVerifier(f.id, tr, signing.IdentityOptions{CertificateValidNow: f.validNow})
}

// signerFlags are the flags naming the publisher and the authority an
// offline check trusts: each a key or a certificate identity.
type signerFlags struct {
	publisherKey, authorityKey string
	publisher, authority       identityFlags
}

// register adds --publisher-key, --authority-key and both identities'
// flags to cmd.
func (s *signerFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&s.publisherKey, "publisher-key", "", "the trusted publisher's public key")
	cmd.Flags().StringVar(&s.authorityKey, "authority-key", "", "the trusted conformance authority's public key")
	s.authority.prefix, s.authority.shared = "authority-", &s.publisher
	s.publisher.register(cmd, "publisher-key")
	s.authority.register(cmd, "authority-key")
}

// identities are the identity verifiers of the publisher and the
// authority, each nil when it is given by key.
func (s *signerFlags) identities() (publisher, authority *signing.Verifier, err error) {
	if s.publisherKey == "" {
		if publisher, err = s.publisher.verifier(""); err != nil {
			return nil, nil, err
		}
	}
	if s.authorityKey == "" {
		if authority, err = s.authority.verifier(""); err != nil {
			return nil, nil, err
		}
	}
	return publisher, authority, nil
}

// verifiers are the publisher's and the authority's verifiers.
func (s *signerFlags) verifiers() (publisher, authority *signing.Verifier, err error) {
	if publisher, err = s.publisher.verifier(s.publisherKey); err != nil {
		return nil, nil, err
	}
	if authority, err = s.authority.verifier(s.authorityKey); err != nil {
		return nil, nil, err
	}
	return publisher, authority, nil
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
