package hostcmd

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/admit"
	"github.com/oa-dev/oa/cmd/oa/internal/cli"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/oci"
)

func newHostCmd() *cobra.Command {
	hostCmd := &cobra.Command{Use: "host", Short: "Set up this host: its key and trust policy"}
	var name string
	var publishers, authorities []string
	initCmd := &cobra.Command{
		Use:   "init",
		Short: "Write a host key and a starter trust policy under $OA_HOME",
		Long: `Init writes $OA_HOME/keys/host.key and host.pub (the key that signs this
host's admission records) and $OA_HOME/policy.cue, a starter policy that
trusts the publisher and authority public keys given. Nothing is overwritten.`,
		Args: cli.WantArgs(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts := host.InitOptions{Host: name, Publishers: map[string][]byte{}, Authorities: map[string][]byte{}}
			for _, group := range []struct {
				files []string
				into  map[string][]byte
			}{{publishers, opts.Publishers}, {authorities, opts.Authorities}} {
				for _, f := range group.files {
					b, err := os.ReadFile(f)
					if err != nil {
						return cli.Usage(fmt.Errorf("reading key %s: %w", f, err))
					}
					group.into[host.KeyName(f)] = b
				}
			}
			home := cli.Home()
			if err := host.Init(home, opts); err != nil {
				return err
			}
			if cli.WantJSON(cmd) {
				return cli.PrintJSON(cmd.OutOrStdout(), map[string]string{"home": home, "policy": filepath.Join(home, host.PolicyFile)})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "host initialized in %s\npolicy: %s\n", home, filepath.Join(home, host.PolicyFile))
			return nil
		},
	}
	initCmd.Flags().StringVar(&name, "name", "", "the host's name in its records")
	initCmd.Flags().StringArrayVar(&publishers, "publisher-key", nil, "a publisher public key to trust (repeatable)")
	initCmd.Flags().StringArrayVar(&authorities, "authority-key", nil, "a conformance authority public key to trust (repeatable)")
	hostCmd.AddCommand(initCmd)
	return hostCmd
}

func newPolicyCmd() *cobra.Command {
	policy := &cobra.Command{Use: "policy", Short: "Check host trust policies"}
	policy.AddCommand(&cobra.Command{
		Use:   "check [FILE]",
		Short: "Validate a host policy (default $OA_HOME/policy.cue) with located errors",
		Args:  cli.WantArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := filepath.Join(cli.Home(), host.PolicyFile)
			if len(args) == 1 {
				path = args[0]
			}
			p, err := host.LoadPolicy(path)
			if err != nil {
				return err
			}
			if cli.WantJSON(cmd) {
				persons := []map[string]any{}
				for _, name := range slices.Sorted(maps.Keys(p.Persons)) {
					per := p.Person(name)
					persons = append(persons, map[string]any{"person": name, "name": per.Name, "key": per.Fingerprint(), "may": per.May, "clients": slices.Sorted(maps.Keys(per.Clients))})
				}
				return cli.PrintJSON(cmd.OutOrStdout(), map[string]any{"host": p.Host, "policyDigest": p.Digest(), "publishers": len(p.Publishers), "authorities": len(p.Authorities), "confinementMinimum": p.ConfinementMinimum(), "persons": persons})
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "policy ok: host %s, %d publishers, %d authorities, digest %s\n", p.Host, len(p.Publishers), len(p.Authorities), p.Digest())
			for _, g := range []struct {
				kind string
				m    map[string]host.TrustedKey
			}{{"publisher", p.Publishers}, {"authority", p.Authorities}} {
				for _, name := range slices.Sorted(maps.Keys(g.m)) {
					fmt.Fprintf(out, "  %s %s: %s\n", g.kind, name, g.m[name].Describe())
				}
			}
			for _, name := range slices.Sorted(maps.Keys(p.AttestationRules)) {
				r := p.AttestationRules[name]
				fmt.Fprintf(out, "  attestation rule %s: %s (%s)\n", name, r.PredicateType, r.Mode)
			}
			for _, name := range slices.Sorted(maps.Keys(p.Persons)) {
				per := p.Person(name)
				fmt.Fprintf(out, "  person %s: key %s; may %s", name, per.Fingerprint(), per.Rights())
				if len(per.Clients) > 0 {
					fmt.Fprintf(out, "; answers at clients %s", strings.Join(slices.Sorted(maps.Keys(per.Clients)), ", "))
				}
				fmt.Fprintln(out)
			}
			if !p.DecidersNamed() {
				fmt.Fprintln(out, "  persons: none named (decisions on paused runs are recorded with a free-text name, unverified)")
			}
			if m := p.ConfinementMinimum(); len(m) > 0 {
				fmt.Fprintf(out, "  confinement minimum: %s\n", strings.Join(m, ", "))
			} else {
				fmt.Fprintln(out, "  confinement minimum: none (any level Landlock gives)")
			}
			return nil
		},
	})
	return policy
}

func newAdmitCmd() *cobra.Command {
	var refs cli.RefFlags
	var as, profile, reason string
	var dryRun, rollback bool
	cmd := &cobra.Command{
		Use:   "admit REF@sha256:… --as NAME [--rollback --reason TEXT]",
		Short: "Verify a release against host policy and record its admission",
		Long: `Admit verifies the release REF@sha256:… against this host's policy: the
artifact and its IR, a publisher signature from a trusted key inside its
window, enough independent conformance attestations for the profile, and
the host's protocols, features, evaluator authorities, pure packages and
capability ceiling. When every check passes it writes an admission record
signed by the host key. --dry-run reports every check and writes nothing.

Releases of a package are admitted side by side: admitting a new version
leaves every other version's admission, and the deployments bound to it,
as they were. Admitting again a release that another release of its
package was admitted after goes back, and is refused admission_rollback
unless asked for: --rollback --reason TEXT admits it with a record that
names who, why and the admission it went back from (oa admissions list
shows it).`,
		Args: cli.WantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			h, rel, err := openHostAndRelease(ctx, &refs, args[0])
			if err != nil {
				return err
			}
			defer h.Close()
			d, rec, err := admit.Admit(ctx, h, rel, admit.AdmitOptions{Profile: profile, AdmittedBy: as, Now: time.Now(), DryRun: dryRun, Rollback: rollback, Reason: reason})
			if d != nil {
				printDecision(cmd, rel.Ref, d, rec)
			}
			return err
		},
	}
	refs.Register(cmd)
	cmd.Flags().StringVar(&as, "as", "", "the person admitting the release (recorded)")
	cmd.Flags().StringVar(&profile, "profile", "", "admission profile (default: the policy's default_profile)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "run every check, write nothing")
	cmd.Flags().BoolVar(&rollback, "rollback", false, "admit again a release another release of its package was admitted after (needs --reason)")
	cmd.Flags().StringVar(&reason, "reason", "", "why going back (recorded with --rollback; one line, at most 500 characters)")
	return cmd
}

func printDecision(cmd *cobra.Command, ref oci.Ref, d *admit.Decision, rec *admit.Record) {
	if cli.WantJSON(cmd) {
		_ = cli.PrintJSON(cmd.OutOrStdout(), map[string]any{"reference": ref.String(), "decision": d, "admission": rec})
		return
	}
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "%s (profile %s)\n", ref.String(), d.Profile)
	for _, c := range d.Checks {
		state := "✓"
		if !c.Passed() {
			state = "✗ " + string(c.Refusal.Code)
		}
		fmt.Fprintf(out, "  %-26s %s\n", c.Name, state)
	}
	if d.PublisherSigner != nil {
		fmt.Fprintf(out, "publisher %s signed as %s\n", d.Publisher, d.PublisherSigner)
	}
	for _, a := range d.Authorities {
		if s := d.AuthoritySigners[a]; s != nil {
			fmt.Fprintf(out, "authority %s attested as %s\n", a, s)
		}
	}
	for _, w := range d.Warnings {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", w)
	}
	if rec != nil {
		fmt.Fprintf(out, "admitted %s@%s as #%d by %s until %s\n", rec.Package, rec.Version, rec.Seq, rec.AdmittedBy, rec.ExpiresAt.Format(time.RFC3339))
		if rec.Rollback != nil {
			fmt.Fprintf(out, "%s\n", rollbackLine(rec.Rollback))
		}
	}
}

// rollbackLine says what a rollback admission went back from, and why.
func rollbackLine(r *admit.Rollback) string {
	from := r.FromArtifactDigest
	if r.FromVersion != "" {
		from = r.FromVersion + " " + from
	}
	return fmt.Sprintf("  rollback from #%d (%s): %s", r.FromSeq, from, r.Reason)
}

func newAdmissionsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "admissions", Short: "List and show this host's admission records"}
	cmd.AddCommand(&cobra.Command{
		Use:   "list [PACKAGE]",
		Short: "List admission records, each verified with the host key",
		Args:  cli.WantArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			h, err := host.Open(cmd.Context(), cli.Home())
			if err != nil {
				return err
			}
			defer h.Close()
			pkg := ""
			if len(args) == 1 {
				pkg = args[0]
			}
			list, err := admit.Admissions(cmd.Context(), h, pkg)
			if err != nil {
				return err
			}
			if cli.WantJSON(cmd) {
				return cli.PrintJSON(cmd.OutOrStdout(), list)
			}
			for _, l := range list {
				state := "unverifiable"
				if l.Verified {
					state = "by " + l.Record.AdmittedBy + " until " + l.Record.ExpiresAt.Format(time.RFC3339)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%-24s #%-3d %s  %s\n", l.Package, l.Seq, l.ArtifactDigest, state)
				if l.Verified && l.Record.Rollback != nil {
					fmt.Fprintf(cmd.OutOrStdout(), "%s\n", rollbackLine(l.Record.Rollback))
				}
			}
			return nil
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "show DIGEST",
		Short: "Show whether a release is actively admitted now, and its record",
		Args:  cli.WantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			h, err := openHostForDigest(cmd, args[0])
			if err != nil {
				return err
			}
			defer h.Close()
			st, err := admit.StatusOf(cmd.Context(), h, args[0], time.Now())
			if err != nil {
				return err
			}
			if cli.WantJSON(cmd) {
				return cli.PrintJSON(cmd.OutOrStdout(), st)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %s\n", args[0], st.State)
			if st.Record != nil {
				fmt.Fprintf(cmd.OutOrStdout(), "  %s@%s #%d, admitted by %s (%s) at %s, expires %s, profile %s\n", st.Record.Package, st.Record.Version, st.Record.Seq,
					st.Record.AdmittedBy, st.Record.OSAccount, st.Record.AdmittedAt.Format(time.RFC3339), st.Record.ExpiresAt.Format(time.RFC3339), st.Record.Profile)
				if st.Record.Rollback != nil {
					fmt.Fprintf(cmd.OutOrStdout(), "%s\n", rollbackLine(st.Record.Rollback))
				}
			}
			if st.Why != nil {
				return st.Why
			}
			return nil
		},
	})
	return cmd
}

func newRevokeCmd() *cobra.Command {
	var reason, as string
	var pf revokePublishFlags
	cmd := &cobra.Command{
		Use:   "revoke DIGEST --reason TEXT --as NAME [--publish --fleet FILE --fleet-key KEY]",
		Short: "Revoke a release on this host, permanently (or, with --publish, for a whole fleet)",
		Long: `Revoke writes a permanent revocation of the release DIGEST signed by this
host's key. With --publish it touches no host: it adds DIGEST to the fleet's
revocation list (REGISTRY/REPO:revocations), signed with the fleet key,
which every host applies at its next oa provision or oa agent sync.`,
		Args: cli.WantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if pf.publish {
				return pf.run(cmd, args[0], reason, as)
			}
			if err := pf.checkLocal(cmd); err != nil {
				return err
			}
			h, err := openHostForDigest(cmd, args[0])
			if err != nil {
				return err
			}
			defer h.Close()
			rev, err := admit.Revoke(cmd.Context(), h, args[0], reason, as, time.Now())
			if err != nil {
				return err
			}
			if cli.WantJSON(cmd) {
				return cli.PrintJSON(cmd.OutOrStdout(), rev)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "revoked %s by %s\n", rev.ArtifactDigest, rev.RevokedBy)
			return nil
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why (recorded)")
	cmd.Flags().StringVar(&as, "as", "", "the person revoking (recorded)")
	_ = cmd.MarkFlagRequired("reason")
	pf.register(cmd)
	return cmd
}

func newStatusCmd() *cobra.Command {
	var refs cli.RefFlags
	cmd := &cobra.Command{
		Use:   "status REF@sha256:…",
		Short: "Print a release's integrity chain on this host as a tree",
		Long: `Status checks, under this host's policy and without writing anything, each
link of the release's chain — artifact → Worker IR → publisher signature →
conformance attestations → admission — and prints it as a tree, each link
with its state. It exits 2 when any link does not hold.`,
		Args: cli.WantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			h, rel, err := openHostAndRelease(ctx, &refs, args[0])
			if err != nil {
				return err
			}
			defer h.Close()
			in, err := admit.IntegrityOf(ctx, h, rel, time.Now())
			if err != nil {
				return err
			}
			if cli.WantJSON(cmd) {
				return cli.PrintJSONResult(cmd.OutOrStdout(), in)
			}
			cli.PrintIntegrity(cmd.OutOrStdout(), rel.Ref.String(), in)
			return in.Err()
		},
	}
	refs.Register(cmd)
	return cmd
}

// openHostAndRelease opens this host and resolves the pinned release s
// under its limits.
func openHostAndRelease(ctx context.Context, refs *cli.RefFlags, s string) (*host.Host, *oci.Release, error) {
	h, err := host.Open(ctx, cli.Home())
	if err != nil {
		return nil, nil, err
	}
	refs.Opened = h
	rel, err := refs.Resolve(ctx, s)
	if err != nil {
		h.Close()
		return nil, nil, err
	}
	return h, rel, nil
}

// openHostForDigest refuses a malformed digest argument, then opens this
// host, so that a bad argument never touches host state.
func openHostForDigest(cmd *cobra.Command, arg string) (*host.Host, error) {
	if _, err := oci.ParseDigest(arg); err != nil {
		return nil, err
	}
	return host.Open(cmd.Context(), cli.Home())
}
