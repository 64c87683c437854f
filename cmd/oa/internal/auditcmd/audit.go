package auditcmd

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/audit"
	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/cmd/oa/internal/cli"
	"github.com/oa-dev/oa/internal/atomicfile"
	"github.com/oa-dev/oa/internal/plural"
)

func newAuditCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "audit", Short: "Export a deployment's whole integrity chain, and verify such an export offline"}
	cmd.AddCommand(newAuditExportCmd(), newAuditVerifyCmd())
	return cmd
}

func newAuditExportCmd() *cobra.Command {
	var deployment, output string
	var reg cli.RegistryFlags
	cmd := &cobra.Command{
		Use:   "export [--deployment NAME] -o FILE",
		Short: "Write one self-contained bundle of the deployment's chain, receipts and signed checkpoint",
		Long: `Export writes FILE: a tar of an OCI image layout holding the bound release
(manifest, Worker IR, every layer, its cosign signature and attestation
manifests, tagged "release") and an audit manifest (artifactType
application/vnd.oa.audit.v1, tagged "audit", subject the release) whose
layers are this host's documents: the policy and registry files, the
signed admission, registry signature, connection, binding and checkpoint
records, the runs and receipts, the checkpoint file, the projection
digests, the bound plan, and the host and receipt public keys as data.
oras, crane and skopeo read it; oa audit verify checks it offline.
--deployment may be left out when the host binds one deployment.`,
		Args: cli.WantArgs(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var sum *audit.Summary
			err := atomicfile.WriteFunc(output, 0o600, func(w io.Writer) (err error) {
				sum, err = audit.Export(cmd.Context(), audit.ExportOptions{Home: cli.Home(), Deployment: deployment, Now: time.Now(), Registry: reg.Options(), Progress: cli.NewProgress(cmd).Step}, w)
				return err
			})
			if err != nil {
				return err
			}
			if cli.WantJSON(cmd) {
				return cli.PrintJSON(cmd.OutOrStdout(), sum)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "exported deployment %s (release %s, %s, %s) to %s\n", sum.Deployment, sum.ArtifactDigest, plural.Count(sum.Receipts, "receipt", "receipts"), plural.Count(sum.Runs, "run", "runs"), output)
			return nil
		},
	}
	cmd.Flags().StringVar(&deployment, "deployment", "", "the bound deployment to export (default: the only one)")
	cmd.Flags().StringVarP(&output, "output", "o", "", "the bundle file to write")
	_ = cmd.MarkFlagRequired("output")
	reg.Register(cmd, "", "the bound release's registry")
	return cmd
}

func newAuditVerifyCmd() *cobra.Command {
	var host string
	var signers cli.SignerFlags
	var lim audit.Limits
	cmd := &cobra.Command{
		Use:   "verify FILE --publisher-key P.pub|--certificate-identity… --authority-key A.pub|--authority-certificate-identity… --host-key H.pub",
		Short: "Recompute every digest and signature of an exported chain offline; name the first broken link",
		Long: `Verify checks a bundle written by oa audit export with only the three
public keys given: no OA_HOME, no network. It checks, in chain order, the
bundle itself, the artifact, Worker IR, publisher signature and conformance
attestation, the admission, the signed registry, the connections, the
projection (recomputed from the IR), the plan (resolved again and compared
with the binding), the binding, and the receipts (chain, host-signed
checkpoints, the receipt key the host pinned, bindings, runs). Keys inside
the bundle are never trusted. It prints the chain as a tree (--json for a
report) and exits 2 naming the first broken link's blocking code.

A publisher or authority trusted by certificate identity is given as in
oa verify: --certificate-identity[-regexp], --certificate-oidc-issuer[-regexp]
and --trusted-root (your own trusted_root.json, which the signatures are
verified with), and the same flags prefixed "authority-". The bundle
carries the trusted roots the host's policy named, which rebuild that
policy (their digests are part of the policy digest the admission names);
they are never used to verify a signature. The admission must name a
signer whose certificate matches the identity you give.

The bundle is read bounded before it is believed: at most --max-entries
tar entries, --max-document-bytes each, --max-manifest-bytes for
index.json and each manifest, --max-bundle-bytes in all; a bundle over a
limit is refused audit_bundle_too_large naming the entry and the flag.`,
		Args: cli.WantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			keys, err := readAuditKeys(signers.PublisherKey, signers.AuthorityKey, host)
			if err != nil {
				return err
			}
			if keys.PublisherIdentity, keys.AuthorityIdentity, err = signers.Identities(); err != nil {
				return err
			}
			r, err := audit.VerifyWithLimits(cmd.Context(), args[0], keys, lim)
			if err != nil {
				return err
			}
			if cli.WantJSON(cmd) {
				if err := cli.PrintJSON(cmd.OutOrStdout(), r); err != nil {
					return err
				}
			} else {
				printAudit(cmd.OutOrStdout(), args[0], r)
			}
			return r.Err()
		},
	}
	signers.Register(cmd)
	cmd.Flags().StringVar(&host, "host-key", "", "the host public key you trust")
	_ = cmd.MarkFlagRequired("host-key")
	cmd.Flags().IntVar(&lim.Entries, audit.FlagMaxEntries, audit.DefaultEntries, "the most tar entries read")
	cmd.Flags().Int64Var(&lim.DocumentBytes, audit.FlagMaxDocumentBytes, audit.DefaultDocumentBytes, "the most bytes of one tar entry or document")
	cmd.Flags().Int64Var(&lim.ManifestBytes, audit.FlagMaxManifestBytes, audit.DefaultManifestBytes, "the most bytes of index.json or a manifest")
	cmd.Flags().Int64Var(&lim.BundleBytes, audit.FlagMaxBundleBytes, audit.DefaultBundleBytes, "the most bytes of all tar entries")
	return cmd
}

// maxKeyFile bounds a public key file read.
const maxKeyFile = 64 << 10

// readAuditKeys reads the three trusted public key files.
func readAuditKeys(publisher, authority, host string) (audit.Keys, error) {
	var k audit.Keys
	for _, f := range []struct {
		path string
		into *[]byte
	}{{publisher, &k.Publisher}, {authority, &k.Authority}, {host, &k.Host}} {
		if f.path == "" {
			continue // a signer given by identity
		}
		file, err := os.Open(f.path)
		if err != nil {
			return k, blocking.New(blocking.KeyInvalid, "a key file cannot be read")
		}
		b, err := io.ReadAll(io.LimitReader(file, maxKeyFile+1))
		file.Close()
		if err != nil || len(b) > maxKeyFile {
			return k, blocking.New(blocking.KeyInvalid, "a key file cannot be read or is too large")
		}
		*f.into = b
	}
	return k, nil
}

// printAudit prints the audited chain as a tree, as oa status does.
func printAudit(out io.Writer, file string, r *audit.Report) {
	name := r.Host
	if name == "" {
		name = "not verified"
	}
	fmt.Fprintf(out, "%s (host %s, deployment %s)\n", file, name, r.Deployment)
	indent := ""
	for _, l := range r.Links {
		state := "✓"
		if l.Refusal != nil {
			state = "✗ " + string(l.Refusal.Code)
		}
		detail := l.Detail
		if l.Signer != nil {
			detail = "signed by " + l.Signer.String()
		}
		fmt.Fprintf(out, "%s└── %-*s %s  %s\n", indent, max(0, 60-len(indent)), l.Name, state, detail)
		indent += "  "
	}
	if r.OK {
		fmt.Fprintln(out, "audit ok: every link holds")
	} else {
		fmt.Fprintf(out, "audit BROKEN at %s\n", r.FirstBroken)
	}
}
