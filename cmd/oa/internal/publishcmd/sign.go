package publishcmd

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/cmd/oa/internal/cli"
	"github.com/oa-dev/oa/internal/canonical"
	"github.com/oa-dev/oa/internal/plural"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/signing"
)

func newSignCmd() *cobra.Command {
	var refs cli.RefFlags
	var key string
	var asBundle bool
	cmd := &cobra.Command{
		Use:   "sign --key KEY REF@sha256:…",
		Short: "Sign an artifact's exact digest as its publisher (cosign's format)",
		Long: `Sign verifies the worker artifact REF@sha256:… and writes a publisher
signature over its digest in cosign's format (a simple-signing payload under
the tag sha256-<hex>.sig), which the stock cosign verify --key accepts. With
--bundle it writes cosign v3's default format instead: a sigstore bundle
(DSSE, in-toto statement of type https://sigstore.dev/cosign/sign/v1) as a
referrer of the artifact. No transparency log or certificate authority is
contacted.`,
		Args: cli.WantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			signer, err := cli.LoadSigner(key)
			if err != nil {
				return err
			}
			pinned, err := refs.OpenPinned(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			ref := pinned.Release.Ref
			written := signing.WriteOptions{Signer: signer, Repository: ref.Name(), Bundle: asBundle}
			if _, err := signing.Sign(cmd.Context(), pinned.Writable, pinned.Artifact.Descriptor, written); err != nil {
				return err
			}
			return printSigned(cmd, "signed", ref, signer.KeyID(), nil)
		},
	}
	refs.Register(cmd)
	cmd.Flags().StringVar(&key, "key", "", "the publisher's private key (cosign format)")
	cmd.Flags().BoolVar(&asBundle, "bundle", false, "write a sigstore bundle referrer (cosign v3's default) instead of the .sig tag")
	_ = cmd.MarkFlagRequired("key")
	return cmd
}

func newAttestCmd() *cobra.Command {
	var refs cli.RefFlags
	var key, authority, predicateOut string
	var asBundle bool
	cmd := &cobra.Command{
		Use:   "attest --key AUTHORITY_KEY|--predicate-out FILE REF@sha256:…",
		Short: "Run the conformance checks and attest the artifact as a conformance authority",
		Long: `Attest runs the conformance checks on the pushed artifact (the IR re-derived
from its layer matches its digest and the annotation; it decodes strictly and
is schema-valid; components are pure; no customer state; declared risks are
consistent; the skill docs are present). When all pass it writes an in-toto
statement in a DSSE envelope in cosign's attestation format (tag
sha256-<hex>.att, predicate type ` + signing.ConformancePredicateType + `),
which cosign verify-attestation accepts; with --bundle, as a sigstore bundle
referrer of the artifact (cosign v3's default). A failed check writes
nothing.

An authority that attests without a key (a certificate, as cosign does
by default) writes the predicate instead with --predicate-out FILE and
--authority ID, and signs it with its own tool:
cosign attest --type ` + signing.ConformancePredicateType + ` --predicate FILE.`,
		Args: cli.WantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if predicateOut != "" {
				return writeConformancePredicate(cmd, &refs, args[0], authority, predicateOut)
			}
			signer, err := cli.LoadSigner(key)
			if err != nil {
				return err
			}
			pinned, err := refs.OpenPinned(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			ref := pinned.Release.Ref
			if authority == "" {
				authority = signer.KeyID()
			}
			report, err := signing.AttestConformance(cmd.Context(), pinned.Writable, pinned.Artifact, authority, signing.WriteOptions{Signer: signer, Repository: ref.Name(), Bundle: asBundle})
			if err != nil {
				return err
			}
			return printSigned(cmd, "attested", ref, signer.KeyID(), report)
		},
	}
	refs.Register(cmd)
	cmd.Flags().StringVar(&key, "key", "", "the conformance authority's private key (cosign format)")
	cmd.Flags().StringVar(&authority, "authority", "", "the authority's id in the report (default: its key id)")
	cmd.Flags().BoolVar(&asBundle, "bundle", false, "write a sigstore bundle referrer (cosign v3's default) instead of the .att tag")
	cmd.Flags().StringVar(&predicateOut, "predicate-out", "", "write the conformance predicate to this file and sign nothing (for cosign attest --predicate)")
	cmd.MarkFlagsOneRequired("key", "predicate-out")
	cmd.MarkFlagsMutuallyExclusive("key", "predicate-out")
	cmd.MarkFlagsMutuallyExclusive("bundle", "predicate-out")
	cmd.MarkFlagsRequiredTogether("predicate-out", "authority")
	return cmd
}

// writeConformancePredicate runs the conformance checks on the pinned
// release s as authority and, when every check passes, writes the report
// (the predicate of a conformance attestation) to path for a keyless
// authority to sign with cosign attest. A failed check writes nothing.
func writeConformancePredicate(cmd *cobra.Command, refs *cli.RefFlags, s, authority, path string) error {
	pinned, err := refs.OpenPinned(cmd.Context(), s)
	if err != nil {
		return err
	}
	ref := pinned.Release.Ref
	report := signing.Conformance(pinned.Artifact, authority)
	if err := report.Err(); err != nil {
		return err
	}
	b, err := canonical.Marshal(report)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return err
	}
	if cli.WantJSON(cmd) {
		return cli.PrintJSON(cmd.OutOrStdout(), map[string]any{"reference": ref.String(), "predicateType": signing.ConformancePredicateType, "report": report})
	}
	fmt.Fprintf(cmd.OutOrStdout(), "conformance predicate for %s written (%s passed); sign it with cosign attest --type %s\n", ref, plural.Count(len(report.Checks), "check", "checks"), signing.ConformancePredicateType)
	return nil
}

func printSigned(cmd *cobra.Command, verb string, ref oci.Ref, keyID string, report *signing.ConformanceReport) error {
	if cli.WantJSON(cmd) {
		out := map[string]any{"reference": ref.String(), "keyId": keyID}
		if report != nil {
			raw, _ := json.Marshal(report)
			out["report"] = json.RawMessage(raw)
		}
		return cli.PrintJSON(cmd.OutOrStdout(), out)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s %s with key %s\n", verb, ref.String(), keyID)
	if report != nil {
		for _, c := range report.Checks {
			fmt.Fprintf(cmd.OutOrStdout(), "  ✓ %s\n", c.Name)
		}
	}
	return nil
}
