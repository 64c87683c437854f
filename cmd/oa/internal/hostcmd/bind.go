package hostcmd

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/oa-dev/oa/bind"
	"github.com/oa-dev/oa/cmd/oa/internal/cli"
	"github.com/oa-dev/oa/connection"
	"github.com/oa-dev/oa/connector/confine"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/internal/plural"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/resolve"
)

// planFlags are the flags of every command that computes a plan.
type planFlags struct {
	refs       cli.RefFlags
	deployment string
	model      string
	noProbe    bool
}

func (f *planFlags) register(cmd *cobra.Command, modelRequired bool) {
	f.refs.Register(cmd)
	cmd.Flags().StringVar(&f.deployment, "deployment", "", "the deployment the plan is for")
	cmd.Flags().StringVar(&f.model, "model", "", "the model the deployment runs with")
	cmd.Flags().BoolVar(&f.noProbe, "no-probe", false, "do not start each connection to compare its live tool list with the verified one")
	_ = cmd.MarkFlagRequired("deployment")
	if modelRequired {
		_ = cmd.MarkFlagRequired("model")
	}
}

// compute opens this host and the release and computes the plan; it
// returns the release as read, for bind to keep.
func (f *planFlags) compute(cmd *cobra.Command, h *host.Host, reference string) (*resolve.Plan, *oci.Release, error) {
	ctx := cmd.Context()
	rel, err := f.refs.Resolve(ctx, reference)
	if err != nil {
		return nil, nil, err
	}
	plan, _, err := resolve.Compute(ctx, h, rel, resolve.Request{Deployment: f.deployment, Model: f.model}, resolve.ComputeOptions{Now: time.Now(), Probe: !f.noProbe, Connector: cli.ConnectorOptions(cmd)})
	return plan, rel, err
}

func newResolveCmd() *cobra.Command {
	var f planFlags
	cmd := &cobra.Command{
		Use:   "resolve REF@sha256:… --deployment NAME [--model M]",
		Short: "Resolve an admitted release's capabilities into this host's execution plan",
		Long: `Resolve proves, for every capability of the admitted release, the nine
resolution rules against this host's signed capability registry and its
verified connections, and prints the execution plan with its digest
(planDigest). Nothing is written. Each connection of the plan is
started to check its live tool list unless --no-probe.`,
		Args: cli.WantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := bind.CheckNames(f.deployment, modelOrDefault(f.model)); err != nil {
				return err
			}
			return cli.WithHost(cmd, func(h *host.Host) error {
				plan, _, err := f.compute(cmd, h, args[0])
				if err != nil {
					return err
				}
				return printPlan(cmd, plan, remoteNotes(cmd, h, plan))
			})
		},
	}
	f.register(cmd, false)
	return cmd
}

// modelOrDefault lets resolve run before a model is chosen.
func modelOrDefault(m string) string {
	if m == "" {
		return "unspecified"
	}
	return m
}

func newBindCmd() *cobra.Command {
	var f planFlags
	var as string
	var yes bool
	cmd := &cobra.Command{
		Use:   "bind REF@sha256:… --deployment NAME --model M --as NAME [--yes]",
		Short: "Approve this host's execution plan for a deployment and record the binding",
		Long: `Bind resolves the admitted release for the deployment, shows the plan
(consequential capabilities first) and asks the named person to approve it:
on a terminal by typing yes, otherwise only with --yes. The binding (plan
digest, deployment, persona, session policy, model, connection revisions,
approver, time) is signed with the host key. A consequential capability
never binds without that approval. The release, with its signatures and
attestations, is kept in the host's release store ($OA_HOME/releases), so
the coordinator serves it with the registry down.`,
		Args: cli.WantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := bind.CheckNames(f.deployment, f.model); err != nil {
				return err
			}
			if err := host.CheckPerson(as, "the binding"); err != nil {
				return err
			}
			return cli.WithHost(cmd, func(h *host.Host) error {
				plan, rel, err := f.compute(cmd, h, args[0])
				if err != nil {
					return err
				}
				approved := yes
				switch {
				case !yes && stdinIsTerminal():
					printPlanText(cmd.ErrOrStderr(), plan, remoteNotes(cmd, h, plan))
					approved = confirm(cmd.InOrStdin(), cmd.ErrOrStderr(), fmt.Sprintf("Approve this plan for deployment %s as %s? Type yes: ", plan.Deployment, as))
				case !yes && !cli.WantJSON(cmd):
					// No one to ask: show what would be bound, so the
					// refusal that follows can be acted on (--yes).
					printPlanText(cmd.OutOrStdout(), plan, remoteNotes(cmd, h, plan))
					fmt.Fprintf(cmd.OutOrStdout(), "not bound: no terminal to approve on; review the plan above and run again with --yes to approve it as %s\n", as)
				}
				b, err := bind.BindKept(cmd.Context(), h, rel, plan, bind.Approval{By: as, Approved: approved, Now: time.Now()})
				if err != nil {
					return err
				}
				if cli.WantJSON(cmd) {
					return cli.PrintJSON(cmd.OutOrStdout(), b)
				}
				if !stdinIsTerminal() || yes {
					printPlanText(cmd.OutOrStdout(), plan, remoteNotes(cmd, h, plan))
				}
				fmt.Fprintf(cmd.OutOrStdout(), "bound deployment %s as #%d: plan %s approved by %s\n", b.Deployment, b.Seq, b.PlanDigest, b.ApprovedBy)
				return nil
			})
		},
	}
	f.register(cmd, true)
	cmd.Flags().StringVar(&as, "as", "", "the person approving the plan (recorded)")
	cmd.Flags().BoolVar(&yes, "yes", false, "approve the plan without a terminal prompt")
	cmd.AddCommand(newBindInspectCmd())
	return cmd
}

func stdinIsTerminal() bool { return term.IsTerminal(int(os.Stdin.Fd())) }

func confirm(in io.Reader, out io.Writer, prompt string) bool {
	fmt.Fprint(out, prompt)
	line, _ := bufio.NewReader(in).ReadString('\n')
	return strings.TrimSpace(strings.ToLower(line)) == "yes"
}

func newBindInspectCmd() *cobra.Command {
	var refs cli.RefFlags
	var model string
	var noProbe bool
	cmd := &cobra.Command{
		Use:   "inspect DEPLOYMENT",
		Short: "Recompute a deployment's plan from live state and say whether it is the approved one",
		Long: `Inspect recomputes the deployment's plan from this host's live state (the
admission, the signed registry, the connections and, unless --no-probe,
each connection's live tool list) and compares it with the bound plan. It
names every link that changed: admission, policy, registry, persona, model,
connection, connection_revision, tool_inventory, capabilities. Exit status 2
(plan_digest_mismatch) when the plan is not the approved one.`,
		Args: cli.WantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return cli.WithHost(cmd, func(h *host.Host) error {
				b, err := bind.Current(cmd.Context(), h, args[0])
				if err != nil {
					return err
				}
				// The release is read as the coordinator reads it: the
				// host's limits over the registry flags.
				report, err := bind.Inspect(cmd.Context(), h, b, bind.InspectOptions{Transport: refs.Registry.Options(), Now: time.Now(), Model: model, Probe: !noProbe, Connector: cli.ConnectorOptions(cmd)})
				if err != nil {
					return err // a program fault, not a changed link
				}
				if cli.WantJSON(cmd) {
					if perr := cli.PrintJSON(cmd.OutOrStdout(), report); perr != nil {
						return perr
					}
				} else {
					printReport(cmd.OutOrStdout(), report)
				}
				return report.Err()
			})
		},
	}
	refs.Register(cmd)
	cmd.Flags().StringVar(&model, "model", "", "check the plan as if the deployment ran this model")
	cmd.Flags().BoolVar(&noProbe, "no-probe", false, "do not start connections to compare their live tool lists")
	return cmd
}

func printReport(out io.Writer, r *bind.Report) {
	state := "approved: the live plan is the bound one"
	if !r.Approved {
		state = "NOT approved: the live plan differs from the bound one"
	}
	fmt.Fprintf(out, "deployment %s (binding #%d)\n  bound plan    %s\n", r.Deployment, r.Seq, r.BoundDigest)
	if r.CurrentDigest != "" {
		fmt.Fprintf(out, "  current plan  %s\n", r.CurrentDigest)
	} else {
		fmt.Fprintln(out, "  current plan  does not resolve")
	}
	fmt.Fprintf(out, "  %s\n", state)
	for _, c := range r.Changes {
		where := ""
		if c.Capability != "" {
			where = " (" + c.Capability + ")"
		}
		fmt.Fprintf(out, "  changed %-20s%s %s\n", c.Link, where, c.Detail)
	}
}

func printPlan(cmd *cobra.Command, plan *resolve.Plan, remotes []remoteNote) error {
	if cli.WantJSON(cmd) {
		var notes []string
		for _, r := range remotes {
			notes = append(notes, r.note)
		}
		return cli.PrintJSON(cmd.OutOrStdout(), map[string]any{"planDigest": plan.Digest(), "plan": plan, "remoteConnections": notes})
	}
	printPlanText(cmd.OutOrStdout(), plan, remotes)
	return nil
}

// remoteNote is what a plan shows of one remote connection.
type remoteNote struct {
	connection, note string
}

// remoteNotes says, for each remote connection of the plan, where it is
// and whether its traffic is unencrypted, so the person approving a plan
// sees a --plain-http connection. The plan's digest does not change: the
// connection's revision and authority digest already cover its URL.
func remoteNotes(cmd *cobra.Command, h *host.Host, plan *resolve.Plan) []remoteNote {
	var notes []remoteNote
	seen := map[string]bool{}
	for _, e := range plan.Capabilities {
		if seen[e.ConnectionID] {
			continue
		}
		seen[e.ConnectionID] = true
		rec, err := connection.Get(cmd.Context(), h, e.ConnectionID)
		if err != nil || rec.Config.Remote == nil {
			continue
		}
		r := rec.Config.Remote
		auth := r.Auth
		if r.OAuth != nil {
			auth += " " + r.OAuth.Grant
		}
		note := fmt.Sprintf("connection %s is remote: %s (Streamable HTTP, auth %s)", e.ConnectionID, r.URL, auth)
		switch {
		case r.PlainHTTP:
			note += ", PLAIN HTTP: unencrypted (--plain-http)"
		case strings.HasPrefix(r.URL, "http://"):
			note += ", plain HTTP on loopback"
		}
		notes = append(notes, remoteNote{e.ConnectionID, note})
	}
	return notes
}

// printPlanText shows a plan, consequential capabilities first.
func printPlanText(out io.Writer, plan *resolve.Plan, remotes []remoteNote) {
	fmt.Fprintf(out, "plan %s\n  deployment %s on host %s: %s %s, %s\n", plan.Digest(), plan.Deployment, plan.Host, plan.Package, plan.Version, modelShown(plan.Model))
	entries := append([]resolve.Entry{}, plan.Capabilities...)
	sort.SliceStable(entries, func(i, j int) bool {
		return entries[i].Risk == ir.Consequential && entries[j].Risk != ir.Consequential
	})
	fmt.Fprintf(out, "  %-24s %-14s %-13s %-32s %s\n", "CAPABILITY", "RISK", "APPROVAL", "TOOL", "CONNECTION@REV")
	for _, e := range entries {
		fmt.Fprintf(out, "  %-24s %-14s %-13s %-32s %s@%d\n", e.CapabilityKey, e.Risk, e.Approval, e.Connector+"/"+e.RuntimeTool, e.ConnectionID, e.ConnectionRevision)
	}
	printConfinement(out, plan, remotes)
	for _, n := range remotes {
		fmt.Fprintf(out, "  %s\n", n.note)
	}
	fmt.Fprintf(out, "  artifact %s\n  admission %s\n  registry %s\n  persona %s\n", plan.ArtifactDigest, plan.AdmissionDigest, registryShown(plan), plan.PersonaDigest)
}

// registryShown is what the plan covers of the registry: the entries it
// uses (oa.plan/v2), or the whole registry's digest (a v1 plan).
func registryShown(plan *resolve.Plan) string {
	if plan.RegistryDigest != "" {
		return plan.RegistryDigest + " (the whole registry)"
	}
	names := make([]string, len(plan.RegistryEntries))
	for i, e := range plan.RegistryEntries {
		names[i] = e.Entry
	}
	return plural.Count(len(names), "entry", "entries") + " used: " + strings.Join(names, ", ")
}

// modelShown names the plan's model, or says that none was given: resolve
// runs before a model is chosen, and the plan bind approves names one.
func modelShown(model string) string {
	if model == "" {
		return "no model given (oa bind names one with --model; the plan's digest covers it)"
	}
	return "model " + model
}

// printConfinement shows the confinement profile of each connection the
// plan uses, once per connection, in connection order; a remote one (in
// remotes) has none here.
func printConfinement(out io.Writer, plan *resolve.Plan, remotes []remoteNote) {
	remote := map[string]bool{}
	for _, r := range remotes {
		remote[r.connection] = true
	}
	seen := map[string]bool{}
	entries := append([]resolve.Entry{}, plan.Capabilities...)
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].ConnectionID < entries[j].ConnectionID })
	for _, e := range entries {
		if seen[e.ConnectionID] {
			continue
		}
		seen[e.ConnectionID] = true
		what := confine.Describe(e.Confinement)
		if remote[e.ConnectionID] {
			// No process of it runs here: a profile would describe nothing.
			what = "none here: a remote server, reached over Streamable HTTP; oa starts no process for it"
		}
		fmt.Fprintf(out, "  confinement of %s@%d: %s\n", e.ConnectionID, e.ConnectionRevision, what)
	}
}
