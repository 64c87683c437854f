package publishcmd

import (
	"fmt"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/cmd/oa/internal/cli"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/oci"
)

func newPushCmd() *cobra.Command {
	var refs cli.RefFlags
	var source string
	var budget compileFlags
	cmd := &cobra.Command{
		Use:   "push DIR|IR REF",
		Short: "Pack a bundle (or compiled IR) as an OCI artifact and push it",
		Long: `Push compiles DIR (or reads the IR file), packs it as an OCI artifact and
pushes it to REF: a registry HOST/REPO[:TAG], or, without a registry host, an
OCI layout under $OA_HOME/oci (--oci-layout takes a layout path). Without a
tag the package version is the tag. It prints REF@sha256:… to sign, attest
and admit. SOURCE_DATE_EPOCH, when set, stamps the manifest's created time;
otherwise the manifest carries no time and the digest depends on content only.`,
		Args: cli.WantArgs(2, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			w, irBytes, err := budget.loadWorker(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if findings := ir.ScanText(source, false); len(findings) > 0 {
				return blocking.New(findings[0].Code, "rule: %s", findings[0].Rule).At("", "--source")
			}
			created, err := oci.CreatedFromEnv()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			ref, target, err := refs.OpenForWrite(ctx, args[1])
			if err != nil {
				return err
			}
			if ref.Digest != "" {
				return cli.Usage(fmt.Errorf("push takes a tag, not a digest: the digest is what push computes"))
			}
			if ref.Tag == "" {
				ref.Tag = w.Version
			}
			p := cli.NewProgress(cmd)
			p.Step("pushing %s@%s to %s", w.Name, w.Version, ref.String())
			progress := func(d ocispec.Descriptor, sent bool) {
				state := "exists"
				if sent {
					state = "pushed"
				}
				p.Step("  %s %-40s %8d bytes  %s", state, d.Annotations[ocispec.AnnotationTitle], d.Size, d.Digest)
			}
			desc, err := oci.Push(ctx, target, w, irBytes, ref.Tag, oci.PackOptions{Source: source, Created: created, Progress: progress})
			if err != nil {
				return err
			}
			pinned := ref.WithDigest(desc.Digest)
			if cli.WantJSON(cmd) {
				return cli.PrintJSON(cmd.OutOrStdout(), map[string]any{"reference": pinned.String(), "artifactDigest": desc.Digest, "workerIrDigest": ir.DigestBytes(irBytes), "size": desc.Size})
			}
			fmt.Fprintln(cmd.OutOrStdout(), pinned.String())
			return nil
		},
	}
	refs.Register(cmd)
	budget.register(cmd, "compile-")
	cmd.Flags().StringVar(&source, "source", "", "URL of the bundle's source, for the org.opencontainers.image.source annotation")
	return cmd
}
