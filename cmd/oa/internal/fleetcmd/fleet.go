package fleetcmd

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/cmd/oa/internal/cli"
	"github.com/oa-dev/oa/fleet"
	"github.com/oa-dev/oa/internal/plural"
)

func newFleetCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fleet",
		Short: "Provision many hosts from one OCI registry: check, publish, status, audit",
		Long: `A fleet file (CUE of package fleet, #Fleet in schemas/fleet/fleet.cue) names
one registry repository, the hosts (id, labels) and the deployments (release
REGISTRY/REPO@sha256:…, host selector, model, ceiling). oa fleet publish
writes one signed provisioning envelope per host to the repository (tag
host-ID); each host runs oa provision or oa agent sync against it and
pushes its signed status (tag status-ID), which oa fleet status reads, and
its receipts log's newest checkpoint (tag log-ID), which oa fleet audit holds
to the one it saw last.`,
	}
	cmd.AddCommand(newFleetCheckCmd(), newFleetPublishCmd(), newFleetStatusCmd(), newFleetAuditCmd())
	return cmd
}

func newFleetCheckCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "check FILE",
		Short: "Validate a fleet file with located errors",
		Args:  cli.WantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := fleet.LoadSpec(args[0])
			if err != nil {
				return err
			}
			assigned := s.Assignments()
			if cli.WantJSON(cmd) {
				return cli.PrintJSON(cmd.OutOrStdout(), map[string]any{"fleet": s.Name, "registry": s.Registry, "hosts": len(s.Hosts), "deployments": len(s.Deployments), "assignments": assigned})
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "fleet ok: %s, registry %s, %s, %s\n", s.Name, s.Registry, plural.Count(len(s.Hosts), "host", "hosts"), plural.Count(len(s.Deployments), "deployment", "deployments"))
			for _, id := range slices.Sorted(maps.Keys(s.Hosts)) {
				d := assigned[id]
				if d == "" {
					d = "(no deployment selects it)"
				}
				fmt.Fprintf(out, "  %-24s %s\n", id, d)
			}
			return nil
		},
	}
}

func newFleetPublishCmd() *cobra.Command {
	var file, key string
	var reg cli.RegistryFlags
	var expiresIn time.Duration
	cmd := &cobra.Command{
		Use:   "publish --fleet FILE --key FLEET_KEY",
		Short: "Write one signed provisioning envelope per host to the fleet's registry",
		Long: `Publish checks the fleet file, reads and verifies every deployment's release
and writes, for each host a deployment selects, a provisioning envelope
signed with the fleet key (cosign's key format) under REGISTRY/REPO:host-ID:
the release digest, the deployment, the model and the ceiling narrowed to
the package's own capabilities. Nothing host-local, no secret and no
connection id is in it. An envelope that would not change is not written,
so republishing an unchanged fleet changes nothing in the registry (one
manifest request per host). Every envelope and the revocation list carry
issuedAt and expiresAt (--expires-in, 168h by default, at most 720h); hosts refuse them
once expired (fleet_envelope_expired, fleet_revocations_expired), so a
registry serving an old copy is noticed. Republishing re-signs whatever is
past half its lifetime: publish at least every few days. Every refusal is
found before anything is written. On a terminal, without --json, progress
lines on stderr count the hosts checked and published.`,
		Args: cli.WantArgs(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := fleet.CheckExpiry(expiresIn); err != nil {
				return err
			}
			s, err := fleet.LoadSpec(file)
			if err != nil {
				return err
			}
			signer, err := cli.LoadSigner(key)
			if err != nil {
				return err
			}
			opts := fleet.Options{OpenOptions: reg.Options(), ExpiresIn: expiresIn}
			// Progress only for Publish, on a terminal without --json: the
			// revocation list after it is one document.
			withProgress := opts
			withProgress.Progress = publishProgress(cli.NewProgress(cmd).Step, progressInterval, time.Now)
			pubs, err := fleet.Publish(cmd.Context(), s, signer, withProgress)
			if err != nil {
				return err
			}
			refreshed, err := fleet.RefreshRevocations(cmd.Context(), s, signer, opts)
			if err != nil {
				return err
			}
			if cli.WantJSON(cmd) {
				return cli.PrintJSON(cmd.OutOrStdout(), map[string]any{"fleet": s.Name, "registry": s.Registry, "keyId": signer.KeyID(), "hosts": pubs, "revocationsRefreshed": refreshed != nil})
			}
			out := cmd.OutOrStdout()
			changed := 0
			for _, p := range pubs {
				switch {
				case p.Tag == "":
					fmt.Fprintf(out, "  %-24s no deployment selects it\n", p.Host)
				case p.Changed:
					changed++
					fmt.Fprintf(out, "  %-24s %-16s #%-3d written    %s:%s\n", p.Host, p.Deployment, p.Seq, s.Registry, p.Tag)
				default:
					fmt.Fprintf(out, "  %-24s %-16s #%-3d unchanged  %s:%s\n", p.Host, p.Deployment, p.Seq, s.Registry, p.Tag)
				}
			}
			if refreshed != nil {
				fmt.Fprintf(out, "  revocation list re-signed as #%d (past half its lifetime), expires %s\n", refreshed.Seq, refreshed.ExpiresAt.Format(time.RFC3339))
			}
			fmt.Fprintf(out, "fleet %s: %s written, %d unchanged\n", s.Name, plural.Count(changed, "envelope", "envelopes"), len(pubs)-changed-unassigned(pubs))
			return nil
		},
	}
	cmd.Flags().StringVar(&file, "fleet", "", "the fleet file")
	cmd.Flags().StringVar(&key, "key", "", "the fleet's private key (cosign format)")
	reg.Register(cmd, "", "the fleet's registry")
	cmd.Flags().DurationVar(&expiresIn, "expires-in", fleet.DefaultExpiry, "how long hosts believe what is published (envelopes, the revocation list)")
	_ = cmd.MarkFlagRequired("fleet")
	_ = cmd.MarkFlagRequired("key")
	return cmd
}

func unassigned(pubs []fleet.Published) int {
	n := 0
	for _, p := range pubs {
		if p.Tag == "" {
			n++
		}
	}
	return n
}

func newFleetStatusCmd() *cobra.Command {
	var file string
	var stale time.Duration
	var reg cli.RegistryFlags
	cmd := &cobra.Command{
		Use:   "status --fleet FILE [--stale D]",
		Short: "Read every host's signed status from the registry as a table",
		Long: `Status reads each host's status (REGISTRY/REPO:status-ID), verifies its
signature (with the host key the fleet file pins, else the key it carries:
self-signed) and prints host, deployment, release, state, plan digest and
last seen. Hosts whose status is missing, unsigned or older than --stale are
flagged with "!".`,
		Args: cli.WantArgs(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := fleet.LoadSpec(file)
			if err != nil {
				return err
			}
			if stale <= 0 {
				return blocking.New(blocking.FleetIntervalInvalid, "--stale must be positive")
			}
			list, err := fleet.ReadStatuses(cmd.Context(), s, time.Now(), stale, fleet.Options{OpenOptions: reg.Options()})
			if err != nil {
				return err
			}
			if cli.WantJSON(cmd) {
				return cli.PrintJSON(cmd.OutOrStdout(), map[string]any{"fleet": s.Name, "hosts": list})
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "  %-20s %-14s %-19s %-18s %-19s %-12s %s\n", "HOST", "DEPLOYMENT", "RELEASE", "STATE", "PLAN", "SIGNED", "LAST SEEN")
			for _, h := range list {
				flag := " "
				if h.Flagged() {
					flag = "!"
				}
				rel, state, plan, seen := "-", "-", "-", "never"
				if st := h.Status; st != nil {
					rel, state, plan, seen = short(st.Release), string(st.State), short(st.PlanDigest), h.Age+" ago"
					if len(st.Blocking) > 0 {
						state += " " + fmt.Sprint(st.Blocking)
					}
				}
				if h.Stale {
					seen += " (stale)"
				}
				dep := h.Deployment
				if dep == "" {
					dep = "-"
				}
				fmt.Fprintf(out, "%s %-20s %-14s %-19s %-18s %-19s %-12s %s\n", flag, h.Host, dep, rel, state, plan, h.Signed, seen)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&file, "fleet", "", "the fleet file")
	cmd.Flags().DurationVar(&stale, "stale", 15*time.Minute, "flag a host whose last status is older than this")
	reg.Register(cmd, "", "the fleet's registry")
	_ = cmd.MarkFlagRequired("fleet")
	return cmd
}

// short abbreviates a digest for a table: "sha256:" and 12 hex digits.
func short(d string) string {
	if len(d) > 19 {
		return d[:19]
	}
	if d == "" {
		return "-"
	}
	return d
}
