package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/oci"
)

func newCopyCmd() *cobra.Command {
	var from, to refFlags
	cmd := &cobra.Command{
		Use:   "copy SRC DST",
		Short: "Copy an artifact with its signatures and attestations (air-gapped transfer)",
		Long: `Copy moves the artifact SRC names, with its cosign signature and attestation,
to DST — between registries, OCI layouts, or one and the other (for an
air-gapped host, copy to a layout on removable media, then from it). The
artifact is verified before it is copied. It prints DST@sha256:….`,
		Args: wantArgs(2, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			_, src, art, err := from.openPinned(ctx, args[0])
			if err != nil {
				return err
			}
			dstRef, dst, err := to.openForWrite(ctx, args[1])
			if err != nil {
				return err
			}
			if dstRef.Digest != "" && dstRef.Digest != art.Descriptor.Digest {
				return usageError{fmt.Errorf("the destination names another digest than the source")}
			}
			p := newProgress(cmd.ErrOrStderr())
			p.step("copying %s (%d layers, with its signature and attestation if any)", art.Descriptor.Digest, len(art.Layers))
			copied, err := oci.Copy(ctx, src, dst, art.Descriptor, dstRef.Tag)
			if err != nil {
				return err
			}
			p.step("copied: %v", copied)
			pinned := dstRef.WithDigest(art.Descriptor.Digest)
			if wantJSON(cmd) {
				return printJSON(cmd.OutOrStdout(), map[string]any{"reference": pinned.String(), "copied": copied})
			}
			fmt.Fprintln(cmd.OutOrStdout(), pinned.String())
			return nil
		},
	}
	cmd.Flags().BoolVar(&from.layout, "from-oci-layout", false, "SRC is an OCI image layout PATH[:TAG][@DIGEST]")
	cmd.Flags().BoolVar(&from.plainHTTP, "from-plain-http", false, "allow plain HTTP to a non-loopback source registry")
	cmd.Flags().BoolVar(&to.layout, "to-oci-layout", false, "DST is an OCI image layout PATH[:TAG]")
	cmd.Flags().BoolVar(&to.plainHTTP, "to-plain-http", false, "allow plain HTTP to a non-loopback destination registry")
	return cmd
}
