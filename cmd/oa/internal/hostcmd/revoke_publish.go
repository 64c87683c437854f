package hostcmd

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/cmd/oa/internal/cli"
	"github.com/oa-dev/oa/fleet"
	"github.com/oa-dev/oa/oci"
)

// revokePublishFlags are oa revoke's flags for publishing a revocation to
// a fleet.
type revokePublishFlags struct {
	publish   bool
	file, key string
	registry  cli.RegistryFlags
	reset     bool
	expiresIn time.Duration
}

func (f *revokePublishFlags) register(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.publish, "publish", false, "add the digest to the fleet's signed revocation list instead of revoking on this host")
	cmd.Flags().StringVar(&f.file, "fleet", "", "the fleet file (with --publish)")
	cmd.Flags().StringVar(&f.key, "fleet-key", "", "the fleet's private key, cosign format (with --publish)")
	f.registry.Register(cmd, "", "the fleet's registry (with --publish)")
	cmd.Flags().DurationVar(&f.expiresIn, "expires-in", fleet.DefaultExpiry, "how long hosts believe the revocation list (with --publish)")
	cmd.Flags().BoolVar(&f.reset, "reset-revocations", false, "start a new revocation list when the current one is damaged, foreign or signed by another key (with --publish)")
}

// checkLocal refuses fleet flags on a revocation of this host only: a
// revocation meant for the fleet must not silently stay local.
func (f *revokePublishFlags) checkLocal(cmd *cobra.Command) error {
	names := []string{"fleet", "fleet-key", "reset-revocations", "expires-in"}
	if name := f.registry.Changed(); name != "" {
		names = append(names, name)
	}
	for _, name := range names {
		if cmd.Flags().Changed(name) {
			return cli.Usage(fmt.Errorf("--%s is only for --publish (the fleet's revocation list); without --publish oa revoke revokes on this host only", name))
		}
	}
	return nil
}

// run publishes the revocation of arg to the fleet.
func (f *revokePublishFlags) run(cmd *cobra.Command, arg, reason, as string) error {
	d, err := oci.ParseDigest(arg)
	if err != nil {
		return err
	}
	if f.file == "" || f.key == "" {
		return cli.Usage(fmt.Errorf("--publish needs --fleet FILE and --fleet-key KEY"))
	}
	if err := fleet.CheckExpiry(f.expiresIn); err != nil {
		return err
	}
	s, err := fleet.LoadSpec(f.file)
	if err != nil {
		return err
	}
	signer, err := cli.LoadSigner(f.key)
	if err != nil {
		return err
	}
	list, changed, err := fleet.PublishRevocation(cmd.Context(), s, signer, d, reason, as, time.Now(), fleet.RevocationOptions{Options: fleet.Options{OpenOptions: f.registry.Options(), ExpiresIn: f.expiresIn}, Reset: f.reset})
	if err != nil {
		return err
	}
	if cli.WantJSON(cmd) {
		return cli.PrintJSON(cmd.OutOrStdout(), map[string]any{"fleet": s.Name, "changed": changed, "revocations": list})
	}
	verb := "published"
	if !changed {
		verb = "already listed"
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s: %s on fleet %s's revocation list #%d (%d revoked)\n", verb, d, s.Name, list.Seq, len(list.Revoked))
	return nil
}
