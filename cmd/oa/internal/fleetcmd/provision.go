package fleetcmd

import (
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/cmd/oa/internal/cli"
	"github.com/oa-dev/oa/fleet"
)

// provisionFlags are the flags of oa provision and oa agent sync.
type provisionFlags struct {
	envelope string
	noProbe  bool
	registry cli.RegistryFlags
}

func (f *provisionFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.envelope, "envelope", "", "this host's envelope, REGISTRY/REPO:host-ID")
	cmd.Flags().BoolVar(&f.noProbe, "no-probe", false, "do not start each connection to compare its live tool list with the verified one")
	f.registry.Register(cmd, "", "the fleet's registry")
	_ = cmd.MarkFlagRequired("envelope")
}

// provisionOnce runs one provisioning of this host.
func (f *provisionFlags) provisionOnce(cmd *cobra.Command) (*fleet.Result, error) {
	opts := f.options(cmd)
	opts.Now = time.Now()
	return fleet.Provision(cmd.Context(), cli.Home(), f.envelope, opts)
}

// options are the provisioning options the flags say (Now unset).
func (f *provisionFlags) options(cmd *cobra.Command) fleet.ProvisionOptions {
	return fleet.ProvisionOptions{Options: fleet.Options{OpenOptions: f.registry.Options()}, Probe: !f.noProbe, Connector: cli.ConnectorOptions(cmd), Version: cli.Version()}
}

func newProvisionCmd() *cobra.Command {
	var f provisionFlags
	cmd := &cobra.Command{
		Use:   "provision --envelope REGISTRY/REPO:host-ID",
		Short: "Provision this host from its fleet envelope",
		Long: `Provision reads this host's provisioning envelope and verifies it with the
fleet keys of the host policy (its fleet section), applies the fleet's
signed revocation list, copies the release with its signature and
attestation into this host's OCI layout (blobs already there are not
fetched again), admits it under this host's own policy, resolves it against
this host's registry and connections and binds the plan when the policy
lets the fleet pre-approve (fleet.pre_approve) and the plan stays inside
the envelope's ceiling. Otherwise it stops in a blocking state,
awaiting_approval or fleet_ceiling_exceeded, that oa admit (when the
release is not admitted yet: the fleet then only runs the checks, so what
is bound now keeps being served) and oa bind complete. It
pushes this host's signed status (REGISTRY/REPO:status-ID) in every case
but a fault; a run cut short by a registry outage is finished by the next.`,
		Args: cli.WantArgs(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			res, err := f.provisionOnce(cmd)
			if res != nil {
				if perr := printProvisionResult(cmd, res); perr != nil {
					return perr
				}
			}
			return err
		},
	}
	f.register(cmd)
	return cmd
}

// printProvisionResult prints one provisioning result, as JSON with --json.
func printProvisionResult(cmd *cobra.Command, res *fleet.Result) error {
	if cli.WantJSON(cmd) {
		return cli.PrintJSON(cmd.OutOrStdout(), res)
	}
	printProvision(cmd.OutOrStdout(), res)
	return nil
}

// printProvision prints one provisioning result.
func printProvision(out io.Writer, r *fleet.Result) {
	st := r.Status
	fmt.Fprintf(out, "host %s, fleet %s, envelope #%d: %s", st.Host, st.Fleet, st.EnvelopeSeq, st.State)
	if len(st.Blocking) > 0 {
		fmt.Fprintf(out, " %v", st.Blocking)
	}
	fmt.Fprintln(out)
	if st.Deployment != "" {
		fmt.Fprintf(out, "  deployment %s, release %s\n", st.Deployment, st.Release)
	}
	if st.PlanDigest != "" {
		fmt.Fprintf(out, "  plan %s\n", st.PlanDigest)
	}
	for _, d := range r.Revoked {
		fmt.Fprintf(out, "  revoked %s (fleet revocation list)\n", d)
	}
	if r.Unchanged {
		fmt.Fprintln(out, "  unchanged since the last run (envelope, revocation list, binding); no status pushed")
	}
	if len(r.Copied) > 0 {
		fmt.Fprintf(out, "  copied %v into this host's layout\n", r.Copied)
	}
	if r.Admitted {
		fmt.Fprintln(out, "  admitted under this host's policy")
	}
	if r.Bound {
		fmt.Fprintln(out, "  bound (fleet pre-approval)")
	}
	if st.State == fleet.AwaitingApproval {
		if r.NeedsAdmission {
			fmt.Fprintf(out, "  not admitted (what is bound now keeps being served); to admit: oa admit %s --as NAME\n", releaseArgs(r.LocalRef))
		}
		fmt.Fprintf(out, "  to approve: oa bind %s --deployment %s --model M --as NAME\n", releaseArgs(r.LocalRef), st.Deployment)
	}
}

// releaseArgs is how a person names the pulled release on oa admit's and
// oa bind's command line: a folder path (what the local reference is for a
// repository whose first part reads as a host, oa.dev/clinic) is given
// with --oci-layout, or it would be read as a registry.
func releaseArgs(localRef string) string {
	if filepath.IsAbs(localRef) {
		return "--oci-layout " + cli.ShellQuote(localRef)
	}
	return cli.ShellQuote(localRef)
}
