// Package projection is the projection stage: it derives the host-native
// shape of an admitted release — a persona, a SKILL.md in the Agent Skills
// format, the read-only tool list and the effect declarations — with
// personaDigest, skillDigest and materializationDigest.
//
// The projection narrows authority and never manufactures it: it lists only
// capabilities the Worker IR declares, offers a capability as a directly
// callable tool only when it is read_only and needs no approval, and lists
// every other capability as an effect declaration that only the coordinator
// can act on. Everything it writes is derived from the IR and fixed copy:
// no time, no host path, no input value, no secret. Same release, same
// bytes, same digests, in any process.
//
// Project writes persona.md, an Agent Skills folder (skills/<name>/SKILL.md
// with the package's skill docs under references/), tools.json (the
// coordinator's six tools plus each read-only, approval-free capability under
// its contract.ToolName) and effects.json, with the digests in
// projection.json. SKILL.md's tool and argument names and outcome copy come
// from package contract, the source the coordinator serves from; every
// projected text is scanned for customer state.
package projection

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/internal/canonical"
	"github.com/oa-dev/oa/ir"
)

// File names of a projection, relative to its folder. The SKILL.md of a
// package lives at SkillPath(name), its skill docs under ReferencesDir.
const (
	PersonaFile  = "persona.md"
	ToolsFile    = "tools.json"
	EffectsFile  = "effects.json"
	ManifestFile = "projection.json"
	SkillFile    = "SKILL.md"
	// ReferencesDir is the Agent Skills folder, inside the skill folder,
	// that holds the package's skill docs.
	ReferencesDir = "references"
)

// ManifestType is the type of projection.json.
const ManifestType = "oa.projection/v1"

// SkillPath returns the path of a package's SKILL.md in the Agent Skills
// layout: skills/<name>/SKILL.md.
func SkillPath(name string) string { return "skills/" + name + "/" + SkillFile }

// ToolDecl is a read-only capability offered to the harness as a tool.
// Name is the MCP tool name it is served under (contract.ToolName: the key with
// each '.' as '_', since several MCP clients refuse dots); CapabilityKey
// is the capability it reads.
type ToolDecl struct {
	Name          string `json:"name"`
	CapabilityKey string `json:"capabilityKey"`
	Description   string `json:"description"`
}

// EffectDecl declares a capability the harness may not call: a
// consequential capability (or a read-only one that needs a person's
// approval), with the jobs and steps (JOB.STEP) that use it. Only the
// coordinator acts on it, inside a run.
type EffectDecl struct {
	CapabilityKey string      `json:"capabilityKey"`
	Risk          ir.Risk     `json:"risk"`
	Approval      ir.Approval `json:"approval"`
	Description   string      `json:"description"`
	Jobs          []string    `json:"jobs"`
	Steps         []string    `json:"steps"`
}

// Projection is the host-native shape of one release.
type Projection struct {
	Package        string `json:"package"`
	Version        string `json:"version"`
	ArtifactDigest string `json:"artifactDigest"`
	WorkerIRDigest string `json:"workerIrDigest"`
	// Persona is persona.md; Skill is SKILL.md.
	Persona       []byte       `json:"-"`
	Skill         []byte       `json:"-"`
	ReadOnlyTools []ToolDecl   `json:"readOnlyTools"`
	Effects       []EffectDecl `json:"effects"`
	// PersonaDigest and SkillDigest are the sha256 of Persona and Skill;
	// MaterializationDigest is that of the canonical JSON of every
	// projected file's digest with the two release digests (see
	// MaterializationDigest).
	PersonaDigest         string `json:"personaDigest"`
	SkillDigest           string `json:"skillDigest"`
	MaterializationDigest string `json:"materializationDigest"`

	// files are every projected file and manifest projection.json, fixed
	// when Project ran.
	files    map[string][]byte
	manifest Manifest
}

var (
	digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	// skillNameRE is the Agent Skills name rule: lower-case letters,
	// digits and single hyphens, not at either end (length checked apart).
	skillNameRE = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	// docNameRE is a plain file name, as #IRDocument names are.
	docNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)
)

// Project derives the projection of a verified release: w is the Worker
// IR decoded from the artifact whose manifest digest is artifactDigest,
// and must hash to workerIRDigest. It is pure and deterministic.
//
// Refusals: projection_release_mismatch (a digest malformed, or w not the
// IR of workerIRDigest), the IR's own validation codes,
// projection_name_invalid and projection_unsafe_text.
func Project(w *ir.Worker, artifactDigest, workerIRDigest string) (*Projection, error) {
	if w == nil {
		return nil, fmt.Errorf("harness: no worker")
	}
	if !digestRE.MatchString(artifactDigest) || !digestRE.MatchString(workerIRDigest) {
		return nil, blocking.New(blocking.ProjectionReleaseMismatch, "a release digest is not sha256:<64 hex>")
	}
	if d, err := w.Digest(); err != nil || d != workerIRDigest {
		return nil, blocking.New(blocking.ProjectionReleaseMismatch, "the Worker IR does not hash to the workerIrDigest")
	}
	if err := ir.Err(ir.Validate(w)); err != nil {
		return nil, err
	}
	if err := checkNames(w); err != nil {
		return nil, err
	}
	p := &Projection{
		Package: w.Name, Version: w.Version,
		ArtifactDigest: artifactDigest, WorkerIRDigest: workerIRDigest,
		ReadOnlyTools: []ToolDecl{}, Effects: []EffectDecl{},
	}
	for _, c := range w.Capabilities {
		if ir.DirectlyCallable(c) {
			p.ReadOnlyTools = append(p.ReadOnlyTools, ToolDecl{Name: contract.ToolName(c.Key), CapabilityKey: c.Key, Description: c.Description})
			continue
		}
		e := EffectDecl{CapabilityKey: c.Key, Risk: c.Risk, Approval: c.Approval, Description: c.Description, Jobs: []string{}, Steps: []string{}}
		for _, j := range w.Jobs {
			for _, s := range j.Steps {
				if s.Capability != c.Key {
					continue
				}
				if !slices.Contains(e.Jobs, j.Name) {
					e.Jobs = append(e.Jobs, j.Name)
				}
				e.Steps = append(e.Steps, j.Name+"."+s.ID)
			}
		}
		p.Effects = append(p.Effects, e)
	}
	p.Persona = renderPersona(w)
	p.Skill = renderSkill(w, p)
	files := map[string][]byte{
		PersonaFile:       p.Persona,
		SkillPath(w.Name): p.Skill,
	}
	for _, d := range w.Skills {
		files[referencePath(w.Name, d.Name)] = []byte(d.Text)
	}
	var unsafe blocking.List
	for _, name := range slices.Sorted(maps.Keys(files)) {
		unsafe = append(unsafe, scan(name, files[name])...)
	}
	if err := unsafe.Err(); err != nil {
		return nil, err
	}
	var err error
	if files[ToolsFile], err = canonical.Marshal(toolsDoc{Coordinator: contract.CoordinatorTools, ReadOnly: p.ReadOnlyTools}); err != nil {
		return nil, err
	}
	if files[EffectsFile], err = canonical.Marshal(effectsDoc{Effects: p.Effects}); err != nil {
		return nil, err
	}
	m := Manifest{
		Type: ManifestType, Package: p.Package, Version: p.Version,
		ArtifactDigest: artifactDigest, WorkerIRDigest: workerIRDigest,
		Skill: SkillPath(w.Name), Files: map[string]string{},
	}
	for name, b := range files {
		m.Files[name] = ir.DigestBytes(b)
	}
	m.PersonaDigest, m.SkillDigest = m.Files[PersonaFile], m.Files[m.Skill]
	if m.MaterializationDigest, err = MaterializationDigest(m.Files, artifactDigest, workerIRDigest); err != nil {
		return nil, err
	}
	if files[ManifestFile], err = canonical.Marshal(m); err != nil {
		return nil, err
	}
	p.PersonaDigest, p.SkillDigest, p.MaterializationDigest = m.PersonaDigest, m.SkillDigest, m.MaterializationDigest
	p.files, p.manifest = files, m
	return p, nil
}

// checkNames refuses names that cannot be host-native names. The served
// tool names (too long, or taking a coordinator tool's or another
// capability's name) were refused by ir.Validate already.
func checkNames(w *ir.Worker) error {
	var l blocking.List
	if len(w.Name) > 64 || !skillNameRE.MatchString(w.Name) {
		l = append(l, blocking.New(blocking.ProjectionNameInvalid, "not an Agent Skills name").At("", "name"))
	}
	for _, d := range w.Skills {
		if !docNameRE.MatchString(d.Name) || strings.Contains(d.Name, "..") || d.Name == SkillFile {
			l = append(l, blocking.New(blocking.ProjectionNameInvalid, "the skill doc name is not a plain file name").At("", ir.JoinPath([]string{"skills", d.Name})))
		}
	}
	return l.Err()
}

// scan refuses a projected text that looks like customer state, naming the
// file and the rule, never the text.
func scan(name string, b []byte) blocking.List {
	var l blocking.List
	for _, f := range ir.ScanText(string(b), true) {
		l = append(l, blocking.New(blocking.ProjectionUnsafeText, "rule: %s (%s) at byte %d", f.Rule, f.Code, f.Offset).At(name, ""))
	}
	return l
}

func referencePath(pkg, doc string) string {
	return "skills/" + pkg + "/" + ReferencesDir + "/" + doc
}

// toolsDoc is tools.json.
type toolsDoc struct {
	Coordinator []string   `json:"coordinator"`
	ReadOnly    []ToolDecl `json:"readOnly"`
}

// effectsDoc is effects.json.
type effectsDoc struct {
	Effects []EffectDecl `json:"effects"`
}

// Manifest is projection.json: every projected file (but itself) with its
// digest, the release it was derived from and the three digests.
type Manifest struct {
	Type           string `json:"type"`
	Package        string `json:"package"`
	Version        string `json:"version"`
	ArtifactDigest string `json:"artifactDigest"`
	WorkerIRDigest string `json:"workerIrDigest"`
	// Skill is the path of SKILL.md.
	Skill string `json:"skill"`
	// Files maps each projected file's slash-separated path to its digest.
	Files                 map[string]string `json:"files"`
	PersonaDigest         string            `json:"personaDigest"`
	SkillDigest           string            `json:"skillDigest"`
	MaterializationDigest string            `json:"materializationDigest"`
}

// MaterializationDigest returns the materializationDigest: the sha256 of
// the canonical JSON (RFC 8785) of
//
//	{"artifactDigest": …, "files": {path: digest, …}, "workerIrDigest": …}
//
// where files lists every projected file but projection.json.
func MaterializationDigest(files map[string]string, artifactDigest, workerIRDigest string) (string, error) {
	b, err := canonical.Marshal(struct {
		ArtifactDigest string            `json:"artifactDigest"`
		Files          map[string]string `json:"files"`
		WorkerIRDigest string            `json:"workerIrDigest"`
	}{artifactDigest, files, workerIRDigest})
	if err != nil {
		return "", err
	}
	return ir.DigestBytes(b), nil
}

// Manifest returns p's projection.json content.
func (p *Projection) Manifest() Manifest {
	m := p.manifest
	m.Files = maps.Clone(m.Files)
	return m
}

// Files returns every projected file, path (slash-separated, relative to
// the projection folder) → bytes: persona.md, skills/<name>/SKILL.md and
// skills/<name>/references/<doc> (the Agent Skills layout), tools.json,
// effects.json and projection.json. The files are fixed when Project runs;
// the map is a copy.
func (p *Projection) Files() map[string][]byte {
	out := make(map[string][]byte, len(p.files))
	for name, b := range p.files {
		out[name] = slices.Clone(b)
	}
	return out
}
