package main

import (
	"fmt"
	"maps"
	"slices"

	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/fleet"
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
	cmd.AddCommand(newFleetCheckCmd())
	return cmd
}

func newFleetCheckCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "check FILE",
		Short: "Validate a fleet file with located errors",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := fleet.LoadSpec(args[0])
			if err != nil {
				return err
			}
			assigned := s.Assignments()
			if wantJSON(cmd) {
				return printJSON(cmd.OutOrStdout(), map[string]any{"fleet": s.Name, "registry": s.Registry, "hosts": len(s.Hosts), "deployments": len(s.Deployments), "assignments": assigned})
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
