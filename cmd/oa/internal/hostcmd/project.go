package hostcmd

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/admit"
	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/cmd/oa/internal/cli"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/projection"
	"github.com/oa-dev/oa/schemas"
)

func newProjectCmd() *cobra.Command {
	var refs cli.RefFlags
	var out string
	cmd := &cobra.Command{
		Use:   "project REF@sha256:… --out DIR",
		Short: "Project an admitted release onto this host's harness: persona, SKILL.md, tools, effects",
		Long: `Project derives the host-native shape of the release REF@sha256:… from the
release alone, once it is actively admitted on this host: persona.md, an
Agent Skills folder skills/<package>/SKILL.md (with the package's skill docs
under references/), tools.json (the coordinator's tools and the read-only
capability tools), effects.json (the capabilities only the coordinator may
use) and projection.json (every file's digest, personaDigest, skillDigest
and materializationDigest).

DIR must be new, empty, or an earlier projection of the same package, which
is replaced whole. A release that is not actively admitted, or given by tag,
is refused and nothing is written.`,
		Args: cli.WantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			h, rel, err := openHostAndRelease(ctx, &refs, args[0])
			if err != nil {
				return err
			}
			defer h.Close()
			st, err := admit.RequireActive(ctx, h, rel.Descriptor.Digest.String(), time.Now())
			if err != nil {
				return err
			}
			art, err := oci.FetchBound(ctx, rel.Target, rel.Descriptor, schemas.CheckFetchedIR)
			if err != nil {
				return err
			}
			if art.IRDigest != st.Record.WorkerIRDigest {
				return blocking.New(blocking.AdmissionMismatched, "the artifact's Worker IR is not the one admitted")
			}
			p, err := projection.Project(art.Worker, rel.Descriptor.Digest.String(), art.IRDigest)
			if err != nil {
				return err
			}
			if err := p.Write(out); err != nil {
				return err
			}
			printProjection(cmd, rel.Ref, out, p)
			return nil
		},
	}
	refs.Register(cmd)
	cmd.Flags().StringVar(&out, "out", "", "the folder to write the projection into")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}

func printProjection(cmd *cobra.Command, ref oci.Ref, out string, p *projection.Projection) {
	m := p.Manifest()
	if cli.WantJSON(cmd) {
		_ = cli.PrintJSON(cmd.OutOrStdout(), struct {
			Reference string `json:"reference"`
			Out       string `json:"out"`
			*projection.Projection
			Files map[string]string `json:"files"`
		}{ref.String(), out, p, m.Files})
		return
	}
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "projected %s@%s into %s\n", p.Package, p.Version, out)
	for _, name := range slices.Sorted(maps.Keys(m.Files)) {
		fmt.Fprintf(w, "  %-44s %s\n", name, m.Files[name])
	}
	fmt.Fprintf(w, "personaDigest          %s\nskillDigest            %s\nmaterializationDigest  %s\n", p.PersonaDigest, p.SkillDigest, p.MaterializationDigest)
	tools := make([]string, len(p.ReadOnlyTools))
	for i, t := range p.ReadOnlyTools {
		tools[i] = t.Name + " (" + t.CapabilityKey + ")"
	}
	effects := make([]string, len(p.Effects))
	for i, e := range p.Effects {
		effects[i] = fmt.Sprintf("%s (%s, approval %s)", e.CapabilityKey, e.Risk, e.Approval)
	}
	fmt.Fprintf(w, "read-only tools: %s\neffects: %s\n", orNone(tools), orNone(effects))
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
