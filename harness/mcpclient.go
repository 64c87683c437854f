package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/oa-dev/oa/admit"
	"github.com/oa-dev/oa/bind"
	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/internal/atomicfile"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/projection"
)

// MCPClientOptions say where an MCPClient installs and what it installs.
type MCPClientOptions struct {
	// Home is $OA_HOME of the host serving the deployment.
	Home string
	// Client is one of Clients.
	Client string
	// Dir is the folder installed into: the project folder of a
	// project-level client, any folder for a generic client. A user-level
	// client (UserLevel) installs into its own per-user folder instead and
	// ignores Dir, unless it also reads a project's configuration
	// (ProjectLevel: Codex), which it then installs into.
	Dir string
	// Getenv reads the environment the per-user folders come from (HOME,
	// USERPROFILE, APPDATA, XDG_CONFIG_HOME, CODEX_HOME); nil means
	// os.Getenv.
	Getenv func(string) string
	// GOOS is the operating system whose paths are used; empty means this
	// one.
	GOOS string
	// Executable is the oa executable the client starts; it is made
	// absolute.
	Executable string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Scope is where Claude Code's entry goes: ScopeProject (the
	// project's .mcp.json; empty means it) or ScopeLocal (the user's
	// ~/.claude.json, or $CLAUDE_CONFIG_DIR/.claude.json when that is
	// set, projects[Dir].mcpServers, as claude mcp add --scope local
	// writes it). Other clients take no scope.
	Scope string
	// Person, when set, is the person the host policy names who answers
	// at this installation: Prepare makes the key the host holds for it
	// (host.EnsureClientKey) and the server entry names the installation
	// (--client), so the answers given at the client are signed for them.
	Person string
}

// MCPClient is the harness of an MCP client. Its methods are safe to call
// from one goroutine at a time per installation folder.
type MCPClient struct {
	opts MCPClientOptions
	spec clientSpec
	// root is the folder every installed path is relative to: Dir, or a
	// user-level client's own folder.
	root string
	// home is the user's home folder, which a layout path starting with
	// homePrefix is relative to (set only for a layout that has one);
	// homeErr says why it is not known, refusing what needs it.
	home    string
	homeErr error
}

var _ Runtime = (*MCPClient)(nil)

// NewMCPClient returns the MCP-client harness for opts. An unknown client
// is refused with harness_client_unknown.
func NewMCPClient(opts MCPClientOptions) (*MCPClient, error) {
	if !slices.Contains(Clients, opts.Client) {
		return nil, blocking.New(blocking.HarnessClientUnknown, "the client is not one of %v", Clients)
	}
	spec := clientSpecs[opts.Client]
	if spec.project != nil && opts.Dir != "" {
		spec = *spec.project
	}
	switch {
	case opts.Scope == "" || opts.Scope == ScopeProject && opts.Client == ClientClaudeCode:
	case opts.Scope == ScopeLocal && opts.Client == ClientClaudeCode:
		if opts.Dir == "" {
			return nil, errors.New("runtime: Dir is required for Claude Code's local scope")
		}
		abs, err := filepath.Abs(opts.Dir)
		if err != nil {
			return nil, err
		}
		real, err := filepath.EvalSymlinks(abs)
		if err != nil {
			return nil, dirInvalid(err, "the project folder cannot be read")
		}
		spec.serverFile, spec.format = homePrefix+".claude.json", claudeLocalFormat{dir: real, inner: mcpServers}
	default:
		return nil, blocking.New(blocking.HarnessClientUnknown, "scope %q: only claude-code takes a scope, %s or %s", opts.Scope, ScopeLocal, ScopeProject)
	}
	if opts.Home == "" || (opts.Dir == "" && spec.userRoot == nil) {
		return nil, errors.New("runtime: Home and Dir are required")
	}
	var err error
	if opts.Home, err = filepath.Abs(opts.Home); err != nil {
		return nil, err
	}
	root, home := opts.Dir, ""
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	env := clientEnv{getenv: getenv, goos: defaultGOOS(opts.GOOS)}
	if spec.userRoot != nil {
		root, err = spec.userRoot(env)
		if err != nil {
			return nil, blocking.New(blocking.HarnessClientHomeUnknown, "the %s configuration folder cannot be found: %v", opts.Client, err)
		}
	}
	var homeErr error
	if strings.HasPrefix(spec.skills, homePrefix) || strings.HasPrefix(spec.serverFile, homePrefix) {
		if c := getenv("CLAUDE_CONFIG_DIR"); opts.Client == ClientClaudeCode && filepath.IsAbs(c) {
			// Claude Code keeps its .claude.json in $CLAUDE_CONFIG_DIR
			// when that is set, and reads no ~/.claude.json then.
			home = c
		} else if home, err = env.home(); err != nil {
			homeErr = blocking.New(blocking.HarnessClientHomeUnknown, "the user's home folder, where %s reads from, cannot be found: %v", opts.Client, err)
		}
	}
	if root, err = filepath.Abs(root); err != nil {
		return nil, err
	}
	if opts.Dir != "" {
		if opts.Dir, err = filepath.Abs(opts.Dir); err != nil {
			return nil, err
		}
	}
	if opts.Executable != "" {
		if opts.Executable, err = filepath.Abs(opts.Executable); err != nil {
			return nil, err
		}
	}
	return &MCPClient{opts: opts, spec: spec, root: root, home: home, homeErr: homeErr}, nil
}

// Kind is "mcp-client/" followed by the client.
func (m *MCPClient) Kind() string { return "mcp-client/" + m.opts.Client }

func (m *MCPClient) now() time.Time {
	if m.opts.Now != nil {
		return m.opts.Now()
	}
	return time.Now()
}

// RunTurn always refuses with harness_turn_unsupported: an MCP client owns
// its model loop, and oa neither drives nor imitates it.
func (m *MCPClient) RunTurn(context.Context, string, string) error {
	return blocking.New(blocking.HarnessTurnUnsupported, "the %s client runs its own model turns", m.opts.Client)
}

// layout is where one deployment is installed, every path relative to Dir
// and slash-separated.
type layout struct {
	// ServerFile holds the MCP server entry; Merge says it is shared
	// with the client's other servers.
	ServerFile string
	Merge      bool
	// ProjectionDir holds the whole projection (projection.Projection.Write).
	ProjectionDir string
	// SkillDir, when set, is where the client looks for the Agent Skills
	// folder: a copy of the projection's skills/<package>.
	SkillDir string
	// RecordFile is the install record.
	RecordFile string
	// RecordGlob matches every install record of this client in Dir.
	RecordGlob string
}

func (m *MCPClient) layout(deployment, pkg string) layout {
	if m.opts.Client == ClientGeneric {
		return layout{ServerFile: "oa-" + deployment + ".mcp.json", ProjectionDir: "oa-" + deployment, RecordFile: "oa-" + deployment + recordSuffix, RecordGlob: "oa-*" + recordSuffix}
	}
	s := m.spec
	l := layout{ServerFile: s.serverFile, Merge: true, ProjectionDir: s.oaDir + "/" + deployment, RecordFile: s.oaDir + "/" + deployment + recordSuffix, RecordGlob: s.oaDir + "/*" + recordSuffix}
	if s.skills != "" && pkg != "" {
		l.SkillDir = s.skills + "/" + pkg
	}
	return l
}

// path is rel (slash-separated) under the install root, or, when it
// starts with homePrefix, under the user's home folder.
func (m *MCPClient) path(rel string) string {
	if m.home != "" && (rel == "~" || strings.HasPrefix(rel, homePrefix)) {
		return filepath.Join(m.home, filepath.FromSlash(strings.TrimPrefix(rel[1:], "/")))
	}
	return filepath.Join(m.root, filepath.FromSlash(rel))
}

// legacyLayout is l with the skill folder of the client's earlier
// layout, for an installation recorded there; ok is false when the
// client has none.
func (m *MCPClient) legacyLayout(l layout, pkg string) (layout, bool) {
	if m.spec.legacySkills == "" || pkg == "" {
		return l, false
	}
	l.SkillDir = m.spec.legacySkills + "/" + pkg
	return l, true
}

// Root is the folder the installation's paths are relative to: the
// project folder, or a user-level client's own configuration folder.
func (m *MCPClient) Root() string { return m.root }

// ServerName is the name of a deployment's entry in the client's MCP
// configuration.
func ServerName(deployment string) string { return "oa-" + deployment }

// serverEntry is the entry the client needs to start the deployment's
// coordinator; for an installation a person answers at (decider), it
// names the client, whose host-held key signs their answers.
func (m *MCPClient) serverEntry(deployment string, decider bool) ServerEntry {
	args := []string{"coordinator", "serve", "--deployment", deployment}
	if decider {
		args = append(args, "--client", m.opts.Client)
	}
	return ServerEntry{Command: m.opts.Executable, Args: args, Env: map[string]string{"OA_HOME": m.opts.Home}}
}

// release is the bound release, checked, and its projection.
type release struct {
	binding *bind.Binding
	proj    *projection.Projection
}

// checkName refuses a deployment name that breaks the naming rule before
// it becomes part of a path.
func checkName(deployment string) error { return bind.CheckNames(deployment, "unspecified") }

// Prepare installs the deployment into the client: the projection of the
// bound release, (for Claude Code) its skill folder, the MCP server entry
// and, last, the install record. It refuses unless the binding verifies,
// the release is actively admitted, and its projection is the one bound.
func (m *MCPClient) Prepare(ctx context.Context, deployment string) (*Installation, error) {
	if err := checkName(deployment); err != nil {
		return nil, err
	}
	if m.homeErr != nil {
		return nil, m.homeErr
	}
	if m.opts.Executable == "" {
		return nil, errors.New("runtime: Executable is required to install")
	}
	h, err := host.Open(ctx, m.opts.Home)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	rel, err := m.boundRelease(ctx, h, deployment)
	if err != nil {
		return nil, err
	}
	b, p := rel.binding, rel.proj
	clientKey, err := m.decider(h, deployment)
	if err != nil {
		return nil, err
	}
	l := m.layout(deployment, p.Package)
	rec := &Record{
		Type: RecordType, Client: m.opts.Client, Deployment: deployment, Host: b.Host,
		Package: p.Package, Version: p.Version, ArtifactDigest: p.ArtifactDigest, WorkerIRDigest: p.WorkerIRDigest,
		BindingSeq: b.Seq, PlanDigest: b.PlanDigest, Model: b.Model,
		MaterializationDigest: p.MaterializationDigest, PersonaDigest: p.PersonaDigest, SkillDigest: p.SkillDigest,
		Server: ServerRecord{File: l.ServerFile, Name: ServerName(deployment), Entry: m.serverEntry(deployment, m.opts.Person != "")},
		Person: m.opts.Person, ClientKey: clientKey,
		ProjectionDir: l.ProjectionDir, SkillDir: l.SkillDir,
		Files:       map[string]string{},
		InstalledAt: m.now().UTC().Truncate(time.Second),
	}
	files := p.Files()
	for name, data := range files {
		rec.Files[l.ProjectionDir+"/"+name] = digest(data)
	}
	var skill map[string][]byte
	if l.SkillDir != "" {
		skill = skillFiles(files, p.Package)
		for name, data := range skill {
			rec.Files[l.SkillDir+"/"+name] = digest(data)
		}
	}
	// Refuse what can be refused before anything is written.
	if err := m.checkFolders(layoutPaths(l.ServerFile, l.ProjectionDir, l.SkillDir, l.RecordFile)...); err != nil {
		return nil, err
	}
	if l.SkillDir != "" {
		if err := m.checkSkillDir(l, deployment); err != nil {
			return nil, err
		}
	}
	if _, err := m.planServerEntry(l, rec.Server); err != nil {
		return nil, err
	}
	// What an earlier install created stays created: uninstall removes it.
	prev, _ := m.readRecord(m.path(l.RecordFile), deployment)
	rec.CreatedFolders = m.createdFolders(l)
	rec.CreatedRootLevels = m.createdRootLevels()
	if prev != nil {
		rec.CreatedRootLevels = max(rec.CreatedRootLevels, prev.CreatedRootLevels)
		for _, d := range prev.CreatedFolders {
			if l.ancestorOf(d) {
				rec.CreatedFolders = append(rec.CreatedFolders, d)
			}
		}
		rec.CreatedFolders = slices.Compact(slices.Sorted(slices.Values(rec.CreatedFolders)))
	}
	if err := m.clearProjection(l, deployment); err != nil {
		return nil, err
	}
	if err := p.Write(m.path(l.ProjectionDir)); err != nil {
		return nil, err
	}
	if l.SkillDir != "" {
		if err := m.writeSkill(l, deployment, skill); err != nil {
			return nil, err
		}
	}
	edit, err := m.writeServerEntry(l, rec.Server)
	if err != nil {
		return nil, err
	}
	rec.Server.Created, rec.Server.AddedKey, rec.Server.Gap = edit.created, edit.addedKey, edit.gap
	if prev != nil {
		rec.Server.Created = rec.Server.Created || prev.Server.Created
		rec.Server.AddedKey = rec.Server.AddedKey || prev.Server.AddedKey
		if rec.Server.Gap == nil {
			rec.Server.Gap = prev.Server.Gap
		}
	}
	if err := writeRecord(m.path(l.RecordFile), rec); err != nil {
		return nil, err
	}
	if prev != nil && prev.SkillDir != "" && prev.SkillDir != l.SkillDir {
		m.removeMovedSkill(prev, l)
	}
	return m.inspect(ctx, h, deployment)
}

// removeMovedSkill removes the skill folder an earlier install wrote
// where the client's earlier layout put it (Codex's $CODEX_HOME/skills),
// now that installing again wrote it where the client reads it: each file
// still as installed, then the folders left empty that install created.
// A file a person changed or added is left where it is.
func (m *MCPClient) removeMovedSkill(prev *Record, l layout) {
	old := &Record{SkillDir: prev.SkillDir, Files: map[string]string{}}
	for name, d := range prev.Files {
		if within(name, prev.SkillDir) {
			old.Files[name] = d
		}
	}
	for _, d := range prev.CreatedFolders {
		if !l.ancestorOf(d) {
			old.CreatedFolders = append(old.CreatedFolders, d)
		}
	}
	r := &Removal{}
	m.removeFiles(old, r)
	if len(r.Left) == 0 {
		m.removeFolders(old, r)
	}
}

// boundRelease reads the deployment's verified binding, checks its release
// is actively admitted and projects it; the projection must be the bound
// one.
func (m *MCPClient) boundRelease(ctx context.Context, h *host.Host, deployment string) (*release, error) {
	b, err := bind.Current(ctx, h, deployment)
	if err != nil {
		return nil, err
	}
	if _, err := admit.RequireActive(ctx, h, b.ArtifactDigest, m.now()); err != nil {
		return nil, err
	}
	art, err := bind.FetchRelease(ctx, h, b, oci.OpenOptions{})
	if err != nil {
		return nil, err
	}
	if art.IRDigest != b.Plan.WorkerIRDigest {
		return nil, blocking.New(blocking.AdmissionMismatched, "the bound release's Worker IR is not the one bound")
	}
	p, err := projection.Project(art.Worker, b.ArtifactDigest, art.IRDigest)
	if err != nil {
		return nil, err
	}
	if err := sameProjection(p.MaterializationDigest, p.PersonaDigest, p.SkillDigest, b); err != nil {
		return nil, err
	}
	return &release{binding: b, proj: p}, nil
}

// sameProjection refuses digests that are not the bound plan's.
func sameProjection(materialization, persona, skill string, b *bind.Binding) *blocking.Error {
	var changed []string
	for _, c := range []struct{ name, have, want string }{
		{"materialization digest", materialization, b.Plan.MaterializationDigest},
		{"persona digest", persona, b.Plan.PersonaDigest},
		{"skill digest", skill, b.Plan.SkillDigest},
	} {
		if c.have != c.want {
			changed = append(changed, c.name)
		}
	}
	if len(changed) > 0 {
		return blocking.New(blocking.HarnessProjectionStale, "%s differ from binding #%d", strings.Join(changed, ", "), b.Seq)
	}
	return nil
}

// skillFiles returns the projection's Agent Skills folder, paths relative
// to it.
func skillFiles(files map[string][]byte, pkg string) map[string][]byte {
	prefix := "skills/" + pkg + "/"
	out := map[string][]byte{}
	for name, data := range files {
		if rest, ok := strings.CutPrefix(name, prefix); ok && rest != "" {
			out[rest] = data
		}
	}
	return out
}

// Inspect reports the deployment's installation in the client and
// compares it with the current binding: the binding verifies, its release
// is actively admitted, an install record exists, the server entry is
// there and serves this deployment from this host, every installed file
// has its recorded digest (none missing, none added), the installed
// projection is the bound one, and the binding is the one installed.
func (m *MCPClient) Inspect(ctx context.Context, deployment string) (*Installation, error) {
	if err := checkName(deployment); err != nil {
		return nil, err
	}
	if m.homeErr != nil {
		return nil, m.homeErr
	}
	h, err := host.Open(ctx, m.opts.Home)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	return m.inspect(ctx, h, deployment)
}

func (m *MCPClient) inspect(ctx context.Context, h *host.Host, deployment string) (*Installation, error) {
	inst := &Installation{Kind: m.Kind(), Client: m.opts.Client, Deployment: deployment, Dir: m.root, Checks: []Check{}}
	b, err := bind.Current(ctx, h, deployment)
	refusal, err := asRefusal(err)
	if err != nil {
		return nil, err
	}
	inst.add(CheckBinding, refusal)
	if b != nil {
		inst.Bound = &Bound{BindingSeq: b.Seq, PlanDigest: b.PlanDigest, Package: b.Plan.Package, Version: b.Plan.Version, ArtifactDigest: b.ArtifactDigest,
			Model: b.Model, MaterializationDigest: b.Plan.MaterializationDigest, PersonaDigest: b.Plan.PersonaDigest, SkillDigest: b.Plan.SkillDigest}
		_, err := admit.RequireActive(ctx, h, b.ArtifactDigest, m.now())
		refusal, err := asRefusal(err)
		if err != nil {
			return nil, err
		}
		inst.add(CheckAdmission, refusal)
	}
	l := m.layout(deployment, "")
	inst.RecordFile = l.RecordFile
	rec, rerr := m.readRecord(m.path(l.RecordFile), deployment)
	inst.add(CheckRecord, rerr)
	if rec == nil {
		inst.Matches = false
		return inst, nil
	}
	inst.Installed, inst.Record = true, rec
	inst.Decider = deciderOf(h, rec)
	inst.add(CheckServerEntry, m.checkServerEntry(rec, deployment))
	if b != nil {
		settings, err := m.checkSettings(ctx, h, b, rec)
		if err != nil {
			return nil, err
		}
		inst.add(CheckSettings, settings)
	}
	inst.add(CheckFiles, m.checkFiles(rec))
	if b != nil {
		inst.add(CheckProjection, sameProjection(rec.MaterializationDigest, rec.PersonaDigest, rec.SkillDigest, b))
		var link *blocking.Error
		if rec.BindingSeq != b.Seq || rec.PlanDigest != b.PlanDigest {
			link = blocking.New(blocking.HarnessBindingChanged, "installed binding #%d, current binding #%d", rec.BindingSeq, b.Seq)
		}
		inst.add(CheckBindingLink, link)
	}
	inst.Matches = true
	for _, c := range inst.Checks {
		inst.Matches = inst.Matches && c.OK
	}
	return inst, nil
}

// asRefusal splits err into a refusal (nil when err is nil) and a fault.
func asRefusal(err error) (*blocking.Error, error) {
	if err == nil {
		return nil, nil
	}
	l := blocking.Refusals(err)
	if l == nil {
		return nil, err
	}
	if len(l) == 1 {
		return l[0], nil
	}
	codes := make([]string, len(l))
	for i, r := range l {
		codes[i] = string(r.Code)
	}
	e := *l[0]
	e.Detail = fmt.Sprintf("%s (with %v)", e.Detail, codes[1:])
	return &e, nil
}

// writeFileAtomic writes data to path atomically (package atomicfile),
// creating the parent folders.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return dirInvalid(err, "the folder cannot be created")
	}
	if err := atomicfile.Write(path, data, perm); err != nil {
		return dirInvalid(err, "the folder is not writable")
	}
	return nil
}

// dirInvalid is harness_install_dir_invalid for a permission or layout
// problem and the error itself (a fault) otherwise. The detail never names
// the path.
func dirInvalid(err error, detail string) error {
	if errors.Is(err, os.ErrPermission) || errors.Is(err, os.ErrExist) || errors.Is(err, os.ErrNotExist) || isNotDir(err) {
		return blocking.New(blocking.HarnessInstallDirInvalid, "%s", detail)
	}
	return fmt.Errorf("%s: %w", detail, err)
}
