package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/signing"
)

func newVerifyCmd() *cobra.Command {
	var refs refFlags
	var publisherKey, authorityKey string
	cmd := &cobra.Command{
		Use:   "verify REF@sha256:… --publisher-key P.pub --authority-key A.pub",
		Short: "Verify an artifact's integrity chain: artifact, IR, signature, attestation",
		Long: `Verify checks each link of the artifact's chain and reports every one: the
artifact and every blob against its digest; the Worker IR against the IR
annotation and the layers; the publisher signature with the publisher key;
and the conformance attestation with the authority key, which must not be the
publisher's, for this digest and this IR, with every check passed. Each kind
of tampering has its own blocking code. Nothing online is contacted.`,
		Args: wantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			publisher, err := loadVerifier(publisherKey)
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
	_ = cmd.MarkFlagRequired("publisher-key")
	_ = cmd.MarkFlagRequired("authority-key")
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
		fmt.Fprintf(out, "%s %-24s %s  %s%s\n", branch, l.Name, state, l.Digest, form)
	}
}
