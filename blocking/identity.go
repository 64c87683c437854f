package blocking

// Codes raised when a signer is trusted by certificate identity (a
// Fulcio-style certificate checked against a sigstore trusted root) and
// when policy rules check what attestations say.
const (
	CertificateUntrusted        Code = "certificate_untrusted"
	CertificateIdentityMismatch Code = "certificate_identity_mismatch"
	CertificateTimeUnproven     Code = "certificate_time_unproven"
	TrustedRootInvalid          Code = "trusted_root_invalid"
	IdentityInvalid             Code = "identity_invalid"
	AttestationRuleFailed       Code = "attestation_rule_failed"
	AttestationRuleMissing      Code = "attestation_rule_missing"
	AttestationRuleInvalid      Code = "attestation_rule_invalid"
)

func init() {
	register(
		Entry{CertificateUntrusted, StageAdmit, "the signing certificate does not chain to the trusted root",
			"The signature or attestation was made with a certificate that does not chain to any certificate authority of the trusted root (trusted_root.json), or to none that was valid then. Nothing was trusted. Check that the trusted root given (`--trusted-root`, or the publisher's or authority's `trusted_root` in the host policy) is the one of the CA that issued the signer's certificate, with its intermediates; or have the publisher sign again with a certificate from that CA."},
		Entry{CertificateIdentityMismatch, StageAdmit, "the signing certificate names another identity or issuer",
			"A signature verifies with a certificate from the trusted CA, but the identity in its Subject Alternative Name or the OIDC issuer in its extension (1.3.6.1.4.1.57264.1.8) is not the one trusted. Compare the identity and issuer expected (`--certificate-identity[-regexp]`, `--certificate-oidc-issuer[-regexp]`, or the policy's `identity: {subject…, issuer…}`) with the signer's certificate (`openssl x509 -text`); fix whichever is wrong. Regular expressions are unanchored, as cosign's: anchor them with ^ and $."},
		Entry{CertificateTimeUnproven, StageAdmit, "nothing proves the signature was made while its certificate was valid",
			"A certificate is trusted only for signatures proven to be made inside its validity window: by a verified transparency-log integrated time or an RFC 3161 timestamp from a timestamp authority in the trusted root. This signature carries neither, or the time proven is outside the certificate's window (an expired certificate). Have the publisher sign with a timestamp (`cosign sign --timestamp-server-url URL`) or a transparency-log upload, with that TSA or log in the trusted root. For a private CA with long-lived certificates, the host policy may accept \"certificate valid now\" explicitly (`certificate_valid_now: true` on the publisher or authority; `oa verify --certificate-valid-now`); `oa status` shows it."},
		Entry{TrustedRootInvalid, StageAdmit, "the trusted root cannot be read or is not a sigstore trusted_root.json",
			"The trusted root file (given with `--trusted-root`, or named by `trusted_root` in the host policy, relative to the policy's folder) is missing, not a regular file, over 4 MiB, or not a sigstore trusted_root.json (media type application/vnd.dev.sigstore.trustedroot+json, certificate authorities, transparency logs and timestamp authorities with their validity windows). Nothing was trusted. Put the trusted_root.json of the signer's infrastructure there (for public Sigstore: `cosign trusted-root create` or the TUF repository's trusted_root.json)."},
		Entry{IdentityInvalid, StageAdmit, "the certificate identity to trust is incomplete or not a valid regular expression",
			"An identity to trust needs exactly one of a subject (`--certificate-identity`, policy `subject`) or a subject regular expression (`--certificate-identity-regexp`, `subject_regexp`), exactly one of an OIDC issuer (`--certificate-oidc-issuer`, `issuer`) or an issuer regular expression (`--certificate-oidc-issuer-regexp`, `issuer_regexp`), and a trusted root; regular expressions are Go's RE2 syntax. Give both halves, once each, and a trusted root."},
		Entry{AttestationRuleFailed, StageAdmit, "an attestation does not satisfy an enforced policy rule",
			"The host policy's attestation rule named in the detail requires the predicate of every trusted attestation of its predicate type to satisfy a CUE constraint, and the attestation's predicate does not: the detail names the rule and the failing field (never its value). Have the attestation made again with a predicate that satisfies the rule (`cosign verify-attestation --type … | jq` shows what it says), or, if the rule is wrong, fix it in the policy; to roll a rule out first, set its `mode: \"warn\"`."},
		Entry{AttestationRuleMissing, StageAdmit, "no trusted attestation of the type an enforced policy rule names",
			"An enforced attestation rule of the host policy names a predicate type, and no attestation of that type verifies for this release with a trusted publisher or authority (key or identity). Attach one (`cosign attest --type … --predicate …`, signed by a publisher or authority the policy trusts), or set the rule's `mode: \"warn\"` while it is rolled out."},
		Entry{AttestationRuleInvalid, StageAdmit, "an attestation rule of the host policy is not valid CUE",
			"An attestation rule's `constraint` must be CUE (a struct of constraints on the predicate, such as `buildDefinition: externalParameters: workflow: repository: \"https://github.com/acme/workers\"`), using only the standard packages allowed in `pure_packages`. Fix the rule at the location given and run `oa policy check` again."},
	)
}
