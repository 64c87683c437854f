package cli

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/signing"
)

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
		return LoadVerifier(keyPath)
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

// SignerFlags are the flags naming the publisher and the authority an
// offline check trusts: each a key or a certificate identity.
type SignerFlags struct {
	PublisherKey, AuthorityKey string
	publisher, authority       identityFlags
}

// Register adds --publisher-key, --authority-key and both identities'
// flags to cmd.
func (s *SignerFlags) Register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&s.PublisherKey, "publisher-key", "", "the trusted publisher's public key")
	cmd.Flags().StringVar(&s.AuthorityKey, "authority-key", "", "the trusted conformance authority's public key")
	s.authority.prefix, s.authority.shared = "authority-", &s.publisher
	s.publisher.register(cmd, "publisher-key")
	s.authority.register(cmd, "authority-key")
}

// Identities are the identity verifiers of the publisher and the
// authority, each nil when it is given by key.
func (s *SignerFlags) Identities() (publisher, authority *signing.Verifier, err error) {
	if s.PublisherKey == "" {
		if publisher, err = s.publisher.verifier(""); err != nil {
			return nil, nil, err
		}
	}
	if s.AuthorityKey == "" {
		if authority, err = s.authority.verifier(""); err != nil {
			return nil, nil, err
		}
	}
	return publisher, authority, nil
}

// Verifiers are the publisher's and the authority's verifiers.
func (s *SignerFlags) Verifiers() (publisher, authority *signing.Verifier, err error) {
	if publisher, err = s.publisher.verifier(s.PublisherKey); err != nil {
		return nil, nil, err
	}
	if authority, err = s.authority.verifier(s.AuthorityKey); err != nil {
		return nil, nil, err
	}
	return publisher, authority, nil
}
