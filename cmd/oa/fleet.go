package main

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/fleet"
	"github.com/oa-dev/oa/oci"
)

func newFleetCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fleet",
		Short: "Provision many hosts from one OCI registry: check, publish, status",
		Long: `A fleet file (CUE of package fleet, #Fleet in schemas/fleet/fleet.cue) names
one registry repository, the hosts (id, labels) and the deployments (release
REGISTRY/REPO@sha256:…, host selector, model, ceiling). oa fleet publish
writes one signed provisioning envelope per host to the repository (tag
host-ID); each host runs oa provision or oa agent sync against it and
pushes its signed status (tag status-ID), which oa fleet status reads.`,
	}
	cmd.AddCommand(newFleetCheckCmd(), newFleetPublishCmd(), newFleetStatusCmd())
	return cmd
}

func newFleetCheckCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "check FILE",
		Short: "Validate a fleet file with located errors",
		Args:  WantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := fleet.LoadSpec(args[0])
			if err != nil {
				return err
			}
			assigned := s.Assignments()
			if WantJSON(cmd) {
				return PrintJSON(cmd.OutOrStdout(), map[string]any{"fleet": s.Name, "registry": s.Registry, "hosts": len(s.Hosts), "deployments": len(s.Deployments), "assignments": assigned})
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "fleet ok: %s, registry %s, %d hosts, %d deployments\n", s.Name, s.Registry, len(s.Hosts), len(s.Deployments))
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
	var reg registryFlags
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
found before anything is written.`,
		Args: WantArgs(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := fleet.CheckExpiry(expiresIn); err != nil {
				return err
			}
			s, err := fleet.LoadSpec(file)
			if err != nil {
				return err
			}
			signer, err := loadSigner(key)
			if err != nil {
				return err
			}
			opts := fleet.Options{OpenOptions: reg.options(), ExpiresIn: expiresIn}
			pubs, err := fleet.Publish(cmd.Context(), s, signer, opts)
			if err != nil {
				return err
			}
			refreshed, err := fleet.RefreshRevocations(cmd.Context(), s, signer, opts)
			if err != nil {
				return err
			}
			if WantJSON(cmd) {
				return PrintJSON(cmd.OutOrStdout(), map[string]any{"fleet": s.Name, "registry": s.Registry, "keyId": signer.KeyID(), "hosts": pubs, "revocationsRefreshed": refreshed != nil})
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
			fmt.Fprintf(out, "fleet %s: %d envelopes written, %d unchanged\n", s.Name, changed, len(pubs)-changed-unassigned(pubs))
			return nil
		},
	}
	cmd.Flags().StringVar(&file, "fleet", "", "the fleet file")
	cmd.Flags().StringVar(&key, "key", "", "the fleet's private key (cosign format)")
	reg.register(cmd, "", "the fleet's registry")
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
	var reg registryFlags
	cmd := &cobra.Command{
		Use:   "status --fleet FILE [--stale D]",
		Short: "Read every host's signed status from the registry as a table",
		Long: `Status reads each host's status (REGISTRY/REPO:status-ID), verifies its
signature (with the host key the fleet file pins, else the key it carries:
self-signed) and prints host, deployment, release, state, plan digest and
last seen. Hosts whose status is missing, unsigned or older than --stale are
flagged with "!".`,
		Args: WantArgs(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := fleet.LoadSpec(file)
			if err != nil {
				return err
			}
			if stale <= 0 {
				return blocking.New(blocking.FleetIntervalInvalid, "--stale must be positive")
			}
			list, err := fleet.ReadStatuses(cmd.Context(), s, time.Now(), stale, fleet.Options{OpenOptions: reg.options()})
			if err != nil {
				return err
			}
			if WantJSON(cmd) {
				return PrintJSON(cmd.OutOrStdout(), map[string]any{"fleet": s.Name, "hosts": list})
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
						state += fmt.Sprint(st.Blocking)
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
	reg.register(cmd, "", "the fleet's registry")
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

// revokePublishFlags are oa revoke's flags for publishing a revocation to
// a fleet.
type revokePublishFlags struct {
	publish   bool
	file, key string
	registry  registryFlags
	reset     bool
	expiresIn time.Duration
}

func (f *revokePublishFlags) register(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.publish, "publish", false, "add the digest to the fleet's signed revocation list instead of revoking on this host")
	cmd.Flags().StringVar(&f.file, "fleet", "", "the fleet file (with --publish)")
	cmd.Flags().StringVar(&f.key, "fleet-key", "", "the fleet's private key, cosign format (with --publish)")
	f.registry.register(cmd, "", "the fleet's registry (with --publish)")
	cmd.Flags().DurationVar(&f.expiresIn, "expires-in", fleet.DefaultExpiry, "how long hosts believe the revocation list (with --publish)")
	cmd.Flags().BoolVar(&f.reset, "reset-revocations", false, "start a new revocation list when the current one is damaged, foreign or signed by another key (with --publish)")
}

// checkLocal refuses fleet flags on a revocation of this host only: a
// revocation meant for the fleet must not silently stay local.
func (f *revokePublishFlags) checkLocal(cmd *cobra.Command) error {
	names := []string{"fleet", "fleet-key", "reset-revocations", "expires-in"}
	if name := f.registry.changed(); name != "" {
		names = append(names, name)
	}
	for _, name := range names {
		if cmd.Flags().Changed(name) {
			return UsageError{fmt.Errorf("--%s is only for --publish (the fleet's revocation list); without --publish oa revoke revokes on this host only", name)}
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
		return UsageError{fmt.Errorf("--publish needs --fleet FILE and --fleet-key KEY")}
	}
	if err := fleet.CheckExpiry(f.expiresIn); err != nil {
		return err
	}
	s, err := fleet.LoadSpec(f.file)
	if err != nil {
		return err
	}
	signer, err := loadSigner(f.key)
	if err != nil {
		return err
	}
	list, changed, err := fleet.PublishRevocation(cmd.Context(), s, signer, d, reason, as, time.Now(), fleet.RevocationOptions{Options: fleet.Options{OpenOptions: f.registry.options(), ExpiresIn: f.expiresIn}, Reset: f.reset})
	if err != nil {
		return err
	}
	if WantJSON(cmd) {
		return PrintJSON(cmd.OutOrStdout(), map[string]any{"fleet": s.Name, "changed": changed, "revocations": list})
	}
	verb := "published"
	if !changed {
		verb = "already listed"
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s: %s on fleet %s's revocation list #%d (%d revoked)\n", verb, d, s.Name, list.Seq, len(list.Revoked))
	return nil
}
