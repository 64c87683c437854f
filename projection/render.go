package projection

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/ir"
)

// MaxDescription is the Agent Skills limit on a skill's description, in
// characters.
const MaxDescription = 1024

// renderPersona writes persona.md: the package's persona and the fixed
// authority boundary every harness session works under.
func renderPersona(w *ir.Worker) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", w.Name)
	b.WriteString(strings.TrimSpace(w.Persona.Text))
	b.WriteString("\n\n## How you act\n\n")
	fmt.Fprintf(&b, "You act only through the coordinator, a local MCP server; the skill `%s` says how to call it. ", w.Name)
	b.WriteString("You produce text and typed proposals. The coordinator alone runs workflows, makes changes, asks a person to approve them, checks them and reports the outcome.\n\n")
	b.WriteString("- Only `done` means a change was made and checked. Never present another outcome as success.\n")
	b.WriteString("- Never try to make a change any other way, and never retry a run the coordinator says is not safe to retry.\n")
	b.WriteString("- Never decide for a person. Relay a person's decision exactly as they gave it.\n")
	return []byte(b.String())
}

// renderSkill writes SKILL.md in the Agent Skills format.
func renderSkill(w *ir.Worker, p *Projection) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "---\nname: %s\ndescription: %s\n---\n\n", w.Name, yamlQuote(Description(w.Responsibility)))
	fmt.Fprintf(&b, "# %s\n\n", w.Name)

	b.WriteString("## What this worker does\n\n")
	b.WriteString(strings.TrimSpace(w.Responsibility))
	b.WriteString("\n\nIt works only through the coordinator, a local MCP server. You choose a workflow and send its inputs; the coordinator alone runs the steps, asks a person to approve a change where the package requires it, makes the change, checks it and reports one of four outcomes. You never make a change yourself.\n\n")

	b.WriteString("## Workflows\n\n")
	for _, j := range w.Jobs {
		writeJob(&b, w, j)
	}

	writeHowToCall(&b)
	writeOutcomes(&b)

	b.WriteString("## Read-only tools\n\n")
	if len(p.ReadOnlyTools) == 0 {
		b.WriteString("This worker offers no read-only tools.\n\n")
	} else {
		b.WriteString("These tools only read. You may call them directly, with the arguments their schemas declare.\n\n")
		for _, t := range p.ReadOnlyTools {
			fmt.Fprintf(&b, "- `%s` (capability `%s`): %s\n", t.Name, t.CapabilityKey, oneLine(t.Description))
		}
		b.WriteString("\n")
	}
	if len(p.Effects) > 0 {
		keys := make([]string, len(p.Effects))
		for i, e := range p.Effects {
			need := "no approval needed"
			if e.Approval == ir.ApprovalRequired {
				need = "a person approves each use"
			}
			keys[i] = fmt.Sprintf("`%s` (%s; %s)", e.CapabilityKey, e.Risk, need)
		}
		fmt.Fprintf(&b, "Never tools you call: %s. The coordinator uses them only inside a workflow run.\n\n", strings.Join(keys, ", "))
	}

	if len(w.Skills) == 0 {
		return []byte(b.String())
	}
	b.WriteString("## Package notes\n\n")
	b.WriteString("The publisher's notes on using this worker:\n\n")
	for _, d := range w.Skills {
		fmt.Fprintf(&b, "- [%s](%s/%s)", d.Name, ReferencesDir, d.Name)
		if title := docTitle(d.Text); title != "" {
			fmt.Fprintf(&b, ": %s", title)
		}
		b.WriteString("\n")
	}
	return []byte(b.String())
}

func writeJob(b *strings.Builder, w *ir.Worker, j ir.Job) {
	fmt.Fprintf(b, "### `%s`\n\n", j.Name)
	fmt.Fprintf(b, "Purpose: %s\n\n", oneLine(j.Purpose))
	fmt.Fprintf(b, "Done means: %s\n\n", oneLine(j.DoneMeans))
	b.WriteString("Inputs (send exactly these; no others are accepted):\n\n")
	for _, name := range slices.Sorted(maps.Keys(j.InputSchema.Properties)) {
		in := j.InputSchema.Properties[name]
		need := "optional"
		if slices.Contains(j.InputSchema.Required, name) {
			need = "required"
		}
		fmt.Fprintf(b, "- `%s` (%s, %s): %s", name, in.Type, need, oneLine(in.Description))
		if c := constraints(in); c != "" {
			fmt.Fprintf(b, " %s.", c)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
	var reads, changes, approved []string
	add := func(list *[]string, key string) {
		if name := "`" + key + "`"; !slices.Contains(*list, name) {
			*list = append(*list, name)
		}
	}
	for _, s := range j.Steps {
		if s.Capability == "" {
			continue
		}
		if s.Kind == ir.StepEffect {
			add(&changes, s.Capability)
		} else {
			add(&reads, s.Capability)
		}
		if c, _ := w.Capability(s.Capability); c.Approval == ir.ApprovalRequired {
			add(&approved, s.Capability)
		}
	}
	if len(reads) > 0 {
		fmt.Fprintf(b, "Reads: %s.\n\n", strings.Join(reads, ", "))
	}
	if len(changes) > 0 {
		fmt.Fprintf(b, "Changes, made by the coordinator: %s.\n\n", strings.Join(changes, ", "))
	}
	if len(approved) > 0 {
		fmt.Fprintf(b, "A person approves each use of %s before it happens.\n\n", strings.Join(approved, ", "))
	}
	fmt.Fprintf(b, "If the check after the change does not hold, the outcome is `%s`; if a condition checked before any change does not hold, it is `%s`.\n\n",
		j.OutcomeRule.MissingEvidence, j.OutcomeRule.GuardFailed)
}

func writeHowToCall(b *strings.Builder) {
	b.WriteString("## How to call the coordinator\n\n")
	b.WriteString("The coordinator's tools have exact input and output schemas; send nothing they do not declare.\n\n")
	fmt.Fprintf(b, "1. `%s` lists the workflows above with their exact input schemas. Call it first; where it and this file differ, it is right.\n", contract.ToolListWorkflows)
	fmt.Fprintf(b, "2. `%s` takes `%s` (a workflow name), `%s` (the inputs, exactly as the person gave them) and `%s`:\n", contract.ToolRunWorkflow, contract.ArgWorkflow, contract.ArgInputs, contract.ArgRequestID)
	fmt.Fprintf(b, "   - Use a fresh `%s` for each change you intend to make, and keep it.\n", contract.ArgRequestID)
	fmt.Fprintf(b, "   - To retry, or to read a result again, send the same `%s` with the same inputs: the coordinator runs a request at most once and replays its result. The same `%s` with other inputs is refused.\n", contract.ArgRequestID, contract.ArgRequestID)
	fmt.Fprintf(b, "   - `%s` (default %d, at most %d) is how long the call waits for a terminal outcome. A run still going returns `%s` with its `%s`.\n", contract.ArgWaitSeconds, contract.WaitSecondsDefault, contract.WaitSecondsMax, contract.OutcomeRunning, contract.ArgRunID)
	fmt.Fprintf(b, "3. `%s` takes `%s` (and `%s`) and returns the run's result, waiting the same way. Call it while the outcome is `%s`.\n", contract.ToolGetRun, contract.ArgRunID, contract.ArgWaitSeconds, contract.OutcomeRunning)
	quoted := make([]string, len(contract.Decisions))
	for i, d := range contract.Decisions {
		quoted[i] = "`" + d + "`"
	}
	fmt.Fprintf(b, "4. `%s`, `%s` (`%s`) and `%s` (`%s`, `%s`: %s or %s) concern runs waiting for a person. Use them only to show a person what waits and to relay the decision that person gave you; never decide yourself. The coordinator asks the person to confirm, and a client that cannot ask cannot approve.\n\n",
		contract.ToolListNeedsAttention, contract.ToolGetAttentionItem, contract.ArgAttentionID, contract.ToolDecide, contract.ArgAttentionID, contract.ArgDecision,
		strings.Join(quoted[:len(quoted)-1], ", "), quoted[len(quoted)-1])
	b.WriteString("Every result carries `outcome`, `reason`, `record_changed` (`yes`, `no` or `unknown`), `proof`, `safe_to_retry`, `what_happened` and `next_action`. Pass `what_happened` and `next_action` on as they are.\n\n")
}

func writeOutcomes(b *strings.Builder) {
	b.WriteString("## contract.Outcomes\n\n")
	b.WriteString("| outcome | meaning | safe_to_retry | what you do |\n| --- | --- | --- | --- |\n")
	for _, o := range contract.Outcomes {
		fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", o.Outcome, o.Meaning, o.SafeToRetry, o.Next)
	}
	b.WriteString("\n`running` is the one outcome that is not final. Only `done` says the change was made.\n\n")
}

// constraints renders an input's constraints as a sentence fragment: its
// allowed values, pattern, length and range. Never an example value.
func constraints(in ir.InputProperty) string {
	var parts []string
	if len(in.Enum) > 0 {
		vals := make([]string, len(in.Enum))
		for i, v := range in.Enum {
			vals[i] = codeSpan(v)
		}
		parts = append(parts, "One of "+strings.Join(vals, ", "))
	}
	if in.Pattern != "" {
		parts = append(parts, "Matches the pattern "+codeSpan(in.Pattern))
	}
	if in.MaxLength != nil {
		parts = append(parts, "At most "+number(float64(*in.MaxLength))+" characters")
	}
	switch {
	case in.Minimum != nil && in.Maximum != nil:
		parts = append(parts, "From "+number(*in.Minimum)+" to "+number(*in.Maximum))
	case in.Minimum != nil:
		parts = append(parts, "At least "+number(*in.Minimum))
	case in.Maximum != nil:
		parts = append(parts, "At most "+number(*in.Maximum))
	}
	return strings.Join(parts, ". ")
}

// number formats f, grouping the integer digits by three with commas so
// that a limit never reads as a long digit run.
func number(f float64) string {
	s := strconv.FormatFloat(f, 'f', -1, 64)
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	intPart, frac, hasFrac := strings.Cut(s, ".")
	if len(intPart) > 4 {
		var g strings.Builder
		for i, c := range intPart {
			if i > 0 && (len(intPart)-i)%3 == 0 {
				g.WriteByte(',')
			}
			g.WriteRune(c)
		}
		intPart = g.String()
	}
	if hasFrac {
		return sign + intPart + "." + frac
	}
	return sign + intPart
}

// codeSpan renders s as a Markdown code span, with a fence longer than any
// run of backticks inside it.
func codeSpan(s string) string {
	longest, run := 0, 0
	for _, c := range s {
		if c == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if longest > 0 || strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}

// oneLine collapses every run of white space in s to one space and drops
// other control characters.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, s)
}

// Description returns a skill description derived from responsibility:
// one line of at most MaxDescription characters, cut at the end of a
// sentence (or of a word, marked with "…") when it is longer.
func Description(responsibility string) string {
	s := oneLine(responsibility)
	r := []rune(s)
	if len(r) <= MaxDescription {
		return s
	}
	cut := string(r[:MaxDescription])
	if i := strings.LastIndex(cut, ". "); i > 0 {
		return cut[:i+1]
	}
	cut = string(r[:MaxDescription-1])
	if i := strings.LastIndex(cut, " "); i > 0 {
		cut = cut[:i]
	}
	return cut + "…"
}

// yamlQuote renders s (one line, no control characters) as a YAML
// double-quoted scalar.
func yamlQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// docTitle returns the text of a doc's first line when it is a level-one
// Markdown heading.
func docTitle(text string) string {
	first, _, _ := strings.Cut(strings.TrimLeft(text, " \t\r\n"), "\n")
	if t, ok := strings.CutPrefix(first, "# "); ok {
		return oneLine(t)
	}
	return ""
}
