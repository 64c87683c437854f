package publishcmd

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/cmd/oa/internal/cli"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/pipeline"
	"github.com/oa-dev/oa/schemas"
)

func newInspectCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "inspect FILE",
		Short: "Summarize a Worker IR file: jobs, capabilities with risk, digests",
		Long:  "Inspect decodes a Worker IR file strictly, checks it against #Worker and its invariants, and summarizes it.",
		Args:  cli.WantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := pipeline.ReadIRFile(args[0])
			if err != nil {
				return err
			}
			w, err := schemas.CheckIR(b, schemas.IRCheck{Through: schemas.IRValid})
			if err != nil {
				return err
			}
			s := summarize(w, b)
			if cli.WantJSON(cmd) {
				return cli.PrintJSON(cmd.OutOrStdout(), s)
			}
			printSummary(cmd.OutOrStdout(), s)
			return nil
		},
	}
}

type irSummary struct {
	Name           string            `json:"name"`
	Version        string            `json:"version"`
	Protocol       string            `json:"protocol"`
	WorkerIRDigest string            `json:"workerIrDigest"`
	Canonical      bool              `json:"canonical"`
	Capabilities   []ir.Capability   `json:"capabilities"`
	Jobs           []jobSummary      `json:"jobs"`
	Evaluators     map[string]string `json:"evaluators"`
	Documents      map[string]string `json:"documents"`
	Ceiling        ir.Ceiling        `json:"ceiling"`
	Requires       []string          `json:"requiredFeatures"`
}

type jobSummary struct {
	Name     string   `json:"name"`
	Purpose  string   `json:"purpose"`
	Inputs   []string `json:"inputs"`
	Steps    []string `json:"steps"`
	Evidence []string `json:"requiredEvidence"`
}

func summarize(w *ir.Worker, b []byte) irSummary {
	canon, _ := ir.Encode(w)
	s := irSummary{
		Name: w.Name, Version: w.Version, Protocol: w.Protocol,
		WorkerIRDigest: ir.DigestBytes(canon), Canonical: string(canon) == string(b),
		Capabilities: w.Capabilities, Evaluators: map[string]string{}, Documents: map[string]string{},
		Ceiling: w.Ceiling, Requires: w.RequiredFeatures,
	}
	for _, j := range w.Jobs {
		js := jobSummary{Name: j.Name, Purpose: j.Purpose, Evidence: j.RequiredEvidence}
		for name, p := range j.InputSchema.Properties {
			js.Inputs = append(js.Inputs, name+":"+p.Type)
		}
		ir.SortStrings(js.Inputs)
		for _, st := range j.Steps {
			js.Steps = append(js.Steps, fmt.Sprintf("%s(%s%s)", st.ID, st.Kind, strings.TrimSuffix(" "+st.Capability, " ")))
		}
		s.Jobs = append(s.Jobs, js)
	}
	for _, e := range w.Evaluators {
		s.Evaluators[e.Name] = e.Digest
	}
	s.Documents[w.Persona.Name] = w.Persona.Digest
	for _, d := range w.Skills {
		s.Documents[d.Name] = d.Digest
	}
	return s
}

func printSummary(out io.Writer, s irSummary) {
	fmt.Fprintf(out, "%s@%s  (%s)\n", s.Name, s.Version, s.Protocol)
	fmt.Fprintf(out, "workerIrDigest  %s", s.WorkerIRDigest)
	if !s.Canonical {
		fmt.Fprint(out, "  (of the canonical form; the file itself is not canonical)")
	}
	fmt.Fprintln(out)
	fmt.Fprintln(out, "capabilities:")
	for _, c := range s.Capabilities {
		fmt.Fprintf(out, "  %-28s %-13s approval %s\n", c.Key, c.Risk, c.Approval)
	}
	fmt.Fprintln(out, "jobs:")
	for _, j := range s.Jobs {
		fmt.Fprintf(out, "  %s: %s\n    inputs   %s\n    steps    %s\n    evidence %s\n", j.Name, j.Purpose,
			strings.Join(j.Inputs, ", "), strings.Join(j.Steps, " → "), strings.Join(j.Evidence, ", "))
	}
	fmt.Fprintf(out, "ceiling: %s (max risk %s)\n", strings.Join(s.Ceiling.Capabilities, ", "), s.Ceiling.MaxRisk)
	fmt.Fprintln(out, "digests:")
	for _, m := range []map[string]string{s.Evaluators, s.Documents} {
		for _, k := range sortedKeys(m) {
			fmt.Fprintf(out, "  %-24s %s\n", k, m[k])
		}
	}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return ir.SortStrings(keys)
}
