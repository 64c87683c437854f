package publishcmd

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/cmd/oa/internal/cli"
	"github.com/oa-dev/oa/signing"
)

func newCopyCmd() *cobra.Command {
	var from, to cli.RefFlags
	var requireSigned bool
	cmd := &cobra.Command{
		Use:   "copy SRC DST",
		Short: "Copy an artifact with its signatures and attestations (air-gapped transfer)",
		Long: `Copy moves the artifact SRC names, with every signature and attestation the
source holds for it, to DST — between registries, OCI layouts, or one and the
other (for an air-gapped host, copy to a layout on removable media, then from
it). Both forms cosign writes travel: the sha256-<hex>.sig/.att tags and the
sigstore bundles that refer to the artifact (cosign v3's default). The
artifact is verified before it is copied. It prints DST@sha256:… and, on
stderr, how many signatures and attestations it copied — a warning line when
there are none; with --require-signed, no signature is a refusal and nothing
is copied.`,
		Args: cli.WantArgs(2, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			source, err := from.OpenPinned(ctx, args[0])
			if err != nil {
				return err
			}
			src, art := source.Writable, source.Artifact
			if requireSigned {
				// Refuse before the destination is opened: a layout would be made.
				found, err := signing.CountCopy(ctx, src, art.Descriptor)
				if err != nil {
					return err
				}
				if found.Signatures == 0 {
					return blocking.New(blocking.CopyUnsigned, "the source holds no signature for the digest")
				}
			}
			dstRef, dst, err := to.OpenForWrite(ctx, args[1])
			if err != nil {
				return err
			}
			if dstRef.Digest != "" && dstRef.Digest != art.Descriptor.Digest {
				return cli.Usage(fmt.Errorf("the destination names another digest than the source"))
			}
			p := cli.NewProgress(cmd)
			p.Step("copying %s (%d layers, with its signatures and attestations if any)", art.Descriptor.Digest, len(art.Layers))
			res, err := signing.CopySigned(ctx, src, dst, art.Descriptor, signing.CopyOptions{Tag: dstRef.Tag, RequireSigned: requireSigned})
			if err != nil {
				return err
			}
			printCopied(cmd.ErrOrStderr(), res)
			pinned := dstRef.WithDigest(art.Descriptor.Digest)
			if cli.WantJSON(cmd) {
				return cli.PrintJSON(cmd.OutOrStdout(), map[string]any{
					"reference": pinned.String(), "copied": res.Parts,
					"signatures": res.Signatures, "attestations": res.Attestations, "bundles": res.Bundles,
				})
			}
			fmt.Fprintln(cmd.OutOrStdout(), pinned.String())
			return nil
		},
	}
	cmd.Flags().BoolVar(&from.Layout, "from-oci-layout", false, "SRC is an OCI image layout PATH[:TAG][@DIGEST]")
	from.Registry.Register(cmd, "from-", "the source registry")
	cmd.Flags().BoolVar(&to.Layout, "to-oci-layout", false, "DST is an OCI image layout PATH[:TAG]")
	to.Registry.Register(cmd, "to-", "the destination registry")
	cmd.Flags().BoolVar(&requireSigned, "require-signed", false, "refuse (copy_unsigned) and copy nothing when the source holds no signature")
	return cmd
}

// printCopied says on w how many signatures and attestations a copy
// carried, with a warning line for what it could not carry.
func printCopied(w io.Writer, res *signing.CopyResult) {
	fmt.Fprintf(w, "oa copy: copied %d signature(s) and %d attestation(s) (%d as sigstore bundles)\n", res.Signatures, res.Attestations, res.Bundles)
	switch {
	case res.Signatures == 0 && res.Attestations == 0:
		fmt.Fprintln(w, "oa copy: warning: the source holds no signature and no attestation for this digest; no host will admit the copy until they are added")
	case res.Signatures == 0:
		fmt.Fprintln(w, "oa copy: warning: the source holds no signature for this digest; no host will admit the copy until it is signed")
	case res.Attestations == 0:
		fmt.Fprintln(w, "oa copy: warning: the source holds no attestation for this digest; no host will admit the copy until it is attested")
	}
}
