package harness

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/internal/atomicfile"
	"github.com/oa-dev/oa/internal/canonical"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/projection"
)

// RecordType is the type of an install record.
const RecordType = "oa.harness.install/v1"

// recordSuffix ends every install record's file name.
const recordSuffix = ".install.json"

// ServerEntry is a client's MCP server entry: how the client starts the
// deployment's coordinator over stdio.
type ServerEntry struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
}

// ServerRecord is where the server entry was written and what it was.
type ServerRecord struct {
	// File is the MCP configuration file, relative to the install folder.
	File  string      `json:"file"`
	Name  string      `json:"name"`
	Entry ServerEntry `json:"entry"`
	// Created says install created the file, AddedKey that it added the
	// servers container: uninstall removes them again when they are left
	// empty.
	Created  bool `json:"created,omitempty"`
	AddedKey bool `json:"addedKey,omitempty"`
	// Gap is the whitespace install replaced or added next to the entry
	// that removing the entry alone does not give back: the inside of the
	// empty object it filled (JSON), or the newlines before the table it
	// appended (TOML). Uninstall puts it back, so the file is what it was
	// byte for byte.
	Gap *string `json:"gap,omitempty"`
}

// maxGap bounds a recorded Gap.
const maxGap = 4096

// validGap reports whether a recorded gap is whitespace of at most
// maxGap bytes: a record cannot make uninstall write anything else.
func validGap(gap *string) bool {
	return gap == nil || (len(*gap) <= maxGap && strings.Trim(*gap, " \t\r\n") == "")
}

// Record is the install record: what Prepare installed, so that Inspect
// can compare it with the files and with the binding.
type Record struct {
	Type       string `json:"type"`
	Client     string `json:"client"`
	Deployment string `json:"deployment"`
	Host       string `json:"host"`
	Package    string `json:"package"`
	Version    string `json:"version"`

	ArtifactDigest string `json:"artifactDigest"`
	WorkerIRDigest string `json:"workerIrDigest"`
	BindingSeq     int64  `json:"bindingSeq"`
	PlanDigest     string `json:"planDigest"`
	Model          string `json:"model"`

	MaterializationDigest string `json:"materializationDigest"`
	PersonaDigest         string `json:"personaDigest"`
	SkillDigest           string `json:"skillDigest"`

	Server ServerRecord `json:"server"`
	// Person is the person the host policy names who answers at this
	// installation (`--person`), and ClientKey the public key line of
	// the key the host holds for it; both empty when none was named.
	Person    string `json:"person,omitempty"`
	ClientKey string `json:"clientKey,omitempty"`
	// ProjectionDir holds the whole projection; SkillDir, when set, the
	// client's copy of its Agent Skills folder. Both are relative to the
	// install folder.
	ProjectionDir string `json:"projectionDir"`
	SkillDir      string `json:"skillDir,omitempty"`
	// Files maps every installed file (slash-separated, relative to the
	// install folder) to its digest.
	Files map[string]string `json:"files"`
	// CreatedFolders lists the folders (relative to the install folder)
	// that did not exist before the first install: uninstall removes them
	// when they are empty.
	CreatedFolders []string `json:"createdFolders,omitempty"`
	// CreatedRootLevels is how many folders of a user-level client's own
	// folder, counting up from it, install created (at most
	// maxRootLevels); uninstall removes them again when they are empty.
	CreatedRootLevels int       `json:"createdRootLevels,omitempty"`
	InstalledAt       time.Time `json:"installedAt"`
}

func digest(b []byte) string { return ir.DigestBytes(b) }

func isNotDir(err error) bool { return errors.Is(err, syscall.ENOTDIR) }

// writeRecord writes rec as indented JSON.
func writeRecord(path string, rec *Record) error {
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(path, append(b, '\n'), 0o644)
}

// decodeRecord strictly decodes an install record.
func decodeRecord(b []byte) (*Record, error) {
	var rec Record
	if err := canonical.DecodeStrict(b, &rec); err != nil {
		return nil, err
	}
	if rec.Type != RecordType {
		return nil, errors.New("not an install record")
	}
	return &rec, nil
}

// readRecord reads the deployment's install record. It must be this
// client's, for this deployment, and name only the places this client's
// layout gives the deployment, so a record cannot send Inspect elsewhere.
func (m *MCPClient) readRecord(path, deployment string) (*Record, *blocking.Error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, blocking.New(blocking.HarnessNotInstalled, "no install record for deployment %s", deployment)
	}
	if err != nil {
		return nil, blocking.New(blocking.HarnessRecordInvalid, "the install record cannot be read")
	}
	rec, err := decodeRecord(b)
	if err != nil {
		return nil, blocking.New(blocking.HarnessRecordInvalid, "the install record does not decode")
	}
	l := m.layout(deployment, rec.Package)
	if legacy, ok := m.legacyLayout(l, rec.Package); ok && rec.SkillDir == legacy.SkillDir {
		l = legacy
	}
	switch {
	case rec.Client != m.opts.Client || rec.Deployment != deployment:
		return nil, blocking.New(blocking.HarnessRecordInvalid, "the install record is for another client or deployment")
	case m.opts.Client == ClientClaudeCode && rec.Server.File != l.ServerFile && (rec.Server.File == ".mcp.json" || rec.Server.File == homePrefix+".claude.json"):
		other := ScopeProject
		if rec.Server.File != ".mcp.json" {
			other = ScopeLocal
		}
		return nil, blocking.New(blocking.HarnessRecordInvalid, "the deployment is installed in Claude Code's %s scope (its entry is in %s): give --scope %s", other, rec.Server.File, other)
	case rec.Server.File != l.ServerFile || rec.Server.Name != ServerName(deployment) || rec.ProjectionDir != l.ProjectionDir || rec.SkillDir != l.SkillDir:
		return nil, blocking.New(blocking.HarnessRecordInvalid, "the install record names places this client's layout does not use")
	}
	if !validGap(rec.Server.Gap) {
		return nil, blocking.New(blocking.HarnessRecordInvalid, "the install record's gap is not whitespace")
	}
	if rec.CreatedRootLevels < 0 || rec.CreatedRootLevels > maxRootLevels {
		return nil, blocking.New(blocking.HarnessRecordInvalid, "the install record says it created more folders above the client's than the client has")
	}
	for _, dir := range rec.CreatedFolders {
		if !l.ancestorOf(dir) {
			return nil, blocking.New(blocking.HarnessRecordInvalid, "the install record lists a created folder this client's layout does not use")
		}
	}
	for name := range rec.Files {
		if !within(name, rec.ProjectionDir) && !(rec.SkillDir != "" && within(name, rec.SkillDir)) {
			return nil, blocking.New(blocking.HarnessRecordInvalid, "the install record lists a file outside the installed folders")
		}
	}
	return rec, nil
}

// within reports whether name is a clean relative path inside dir.
func within(name, dir string) bool {
	return path.Clean(name) == name && !path.IsAbs(name) && strings.HasPrefix(name, dir+"/") && !slices.Contains(strings.Split(name, "/"), "..")
}

// maxConfigBytes bounds the client configuration file oa reads.
const maxConfigBytes = 4 << 20

// readConfig reads the client's configuration file: its bytes (nil when
// it does not exist yet) and mode. A file that is not a regular file (a
// link, say) or is over maxConfigBytes is refused, never rewritten.
func (m *MCPClient) readConfig(l layout) (cfg configFile, err error) {
	var b []byte
	file := m.path(l.ServerFile)
	fi, err := os.Lstat(file)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return configFile{nil, false, 0o644}, nil
	case err != nil:
		return configFile{nil, false, 0}, dirInvalid(err, "the MCP configuration cannot be read")
	case !fi.Mode().IsRegular():
		return configFile{nil, false, 0}, blocking.New(blocking.HarnessClientConfigInvalid, "the MCP configuration is a symbolic link or not a regular file").At(file, "")
	case fi.Size() > maxConfigBytes:
		return configFile{nil, false, 0}, blocking.New(blocking.HarnessClientConfigInvalid, "the MCP configuration is over %d bytes", maxConfigBytes).At(file, "")
	}
	f, err := os.Open(file)
	if err != nil {
		return configFile{nil, false, 0}, dirInvalid(err, "the MCP configuration cannot be read")
	}
	defer f.Close()
	b, err = io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return configFile{nil, false, 0}, dirInvalid(err, "the MCP configuration cannot be read")
	}
	if len(b) > maxConfigBytes {
		return configFile{nil, false, 0}, blocking.New(blocking.HarnessClientConfigInvalid, "the MCP configuration is over %d bytes", maxConfigBytes).At(file, "")
	}
	return configFile{b, true, fi.Mode().Perm()}, nil
}

// serverEdit is the client's configuration file as install will write it.
type serverEdit struct {
	out  []byte
	perm os.FileMode
	// created says the file did not exist; addedKey that its servers
	// container did not; gap is ServerRecord.Gap.
	created, addedKey bool
	gap               *string
}

// planServerEntry computes the configuration file with the deployment's
// entry: merged into the client's configuration (every other key, server
// and comment kept), or, for a generic client, a standalone file. A file
// that does not parse is refused with its path and line.
func (m *MCPClient) planServerEntry(l layout, srv ServerRecord) (*serverEdit, error) {
	if !l.Merge {
		return &serverEdit{out: m.spec.format.fresh(srv.Name, srv.Entry), perm: 0o644, created: true}, nil
	}
	cfg, err := m.readConfig(l)
	b, exists, perm := cfg.data, cfg.exists, cfg.perm
	if err != nil {
		return nil, err
	}
	out, added, err := m.spec.format.put(m.path(l.ServerFile), b, srv.Name, srv.Entry)
	if err != nil {
		return nil, err
	}
	return &serverEdit{out: out, perm: perm, created: !exists, addedKey: added, gap: m.spec.format.gap(m.path(l.ServerFile), b, srv.Name)}, nil
}

// writeServerEntry writes the deployment's server entry, atomically.
func (m *MCPClient) writeServerEntry(l layout, srv ServerRecord) (*serverEdit, error) {
	edit, err := m.planServerEntry(l, srv)
	if err != nil {
		return nil, err
	}
	return edit, writeFileAtomic(m.path(l.ServerFile), edit.out, edit.perm)
}

// marshal encodes v without HTML escaping, indented when indent is set.
func marshal(v any, indent string) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", indent)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// checkServerEntry checks the client's configuration still has the
// deployment's entry, serving this deployment from this host with the
// installed executable.
func (m *MCPClient) checkServerEntry(rec *Record, deployment string) *blocking.Error {
	l := m.layout(deployment, "")
	cfg, err := m.readConfig(l)
	b, exists := cfg.data, cfg.exists
	if err != nil {
		refusal, _ := asRefusal(err)
		if refusal == nil {
			refusal = blocking.New(blocking.HarnessServerEntryMissing, "the MCP configuration file is unreadable")
		}
		return refusal
	}
	if !exists {
		return blocking.New(blocking.HarnessServerEntryMissing, "the MCP configuration file is missing")
	}
	e, err := m.spec.format.get(m.path(rec.Server.File), b, rec.Server.Name)
	if err != nil {
		refusal, _ := asRefusal(err)
		if refusal == nil {
			refusal = blocking.New(blocking.HarnessClientConfigInvalid, "the MCP configuration cannot be read")
		}
		return refusal
	}
	if e == nil {
		return blocking.New(blocking.HarnessServerEntryMissing, "no %s entry in %s", rec.Server.Name, rec.Server.File)
	}
	want := m.serverEntry(deployment, rec.Person != "")
	switch {
	case !slices.Equal(e.Args, want.Args):
		return blocking.New(blocking.HarnessServerEntryChanged, "the entry does not run coordinator serve for deployment %s", deployment)
	case e.Env["OA_HOME"] != m.opts.Home:
		return blocking.New(blocking.HarnessServerEntryChanged, "the entry's OA_HOME is not this host's")
	case e.Command != rec.Server.Entry.Command:
		return blocking.New(blocking.HarnessServerEntryChanged, "the entry runs another executable than the one installed")
	}
	fi, err := os.Stat(e.Command)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return blocking.New(blocking.HarnessServerEntryChanged, "the installed oa executable is gone or not executable")
	}
	return nil
}

// checkFiles compares the installed folders with the record: every file
// present with its digest, nothing added, and the projection's manifest
// consistent with the recorded materializationDigest.
func (m *MCPClient) checkFiles(rec *Record) *blocking.Error {
	if err := m.checkFolders(layoutPaths(rec.Server.File, rec.ProjectionDir, rec.SkillDir, "")...); err != nil {
		if refusal, _ := asRefusal(err); refusal != nil {
			return refusal
		}
		return blocking.New(blocking.HarnessInstallDirInvalid, "a folder of the installation cannot be read")
	}
	var altered, missing []string
	for _, name := range slices.Sorted(maps.Keys(rec.Files)) {
		fi, err := os.Lstat(m.path(name))
		if err != nil || !fi.Mode().IsRegular() {
			missing = append(missing, name)
			continue
		}
		b, err := os.ReadFile(m.path(name))
		if err != nil || digest(b) != rec.Files[name] {
			altered = append(altered, name)
		}
	}
	added := 0
	for _, dir := range []string{rec.ProjectionDir, rec.SkillDir} {
		if dir == "" {
			continue
		}
		have, _ := listFiles(m.path(dir))
		for _, name := range have {
			if _, ok := rec.Files[dir+"/"+name]; !ok {
				added++
			}
		}
	}
	var parts []string
	if len(altered) > 0 {
		parts = append(parts, "altered: "+strings.Join(altered, ", "))
	}
	if len(missing) > 0 {
		parts = append(parts, "missing: "+strings.Join(missing, ", "))
	}
	if added > 0 {
		parts = append(parts, fmt.Sprintf("%d file(s) added", added))
	}
	if len(parts) == 0 {
		man, err := projection.ReadManifest(m.path(rec.ProjectionDir))
		if err != nil {
			return blocking.New(blocking.HarnessFilesChanged, "the projection manifest does not decode")
		}
		md, err := projection.MaterializationDigest(man.Files, man.ArtifactDigest, man.WorkerIRDigest)
		if err != nil || md != man.MaterializationDigest || md != rec.MaterializationDigest {
			return blocking.New(blocking.HarnessFilesChanged, "the projection manifest does not give the recorded materializationDigest")
		}
		return nil
	}
	return blocking.New(blocking.HarnessFilesChanged, "%s", strings.Join(parts, "; "))
}

// listFiles lists every entry under dir that is not a folder, as
// slash-separated paths relative to dir, sorted; non-regular entries are
// listed too, and make the error non-nil.
func listFiles(dir string) ([]string, error) {
	var out []string
	var bad error
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		if !d.Type().IsRegular() {
			bad = errors.New("not a regular file")
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	slices.Sort(out)
	if err == nil {
		err = bad
	}
	return out, err
}

// checkSkillDir refuses to replace a skill folder that is neither missing,
// empty, nor holding only files an oa install record in this folder lists
// for it: a person's own skill of the same name, or a file a person added,
// is never overwritten or deleted.
func (m *MCPClient) checkSkillDir(l layout, deployment string) error {
	abs := m.path(l.SkillDir)
	fi, err := os.Lstat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return dirInvalid(err, "the skill folder cannot be read")
	case !fi.IsDir():
		return blocking.New(blocking.HarnessInstallDirInvalid, "the skill folder is a symbolic link or not a folder")
	}
	have, err := listFiles(abs)
	if err != nil {
		return blocking.New(blocking.HarnessInstallDirInvalid, "the skill folder holds something other than files and folders")
	}
	if len(have) == 0 {
		return nil
	}
	records, _ := filepath.Glob(m.path(l.RecordGlob))
	for _, p := range records {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		rec, err := decodeRecord(b)
		if err != nil || rec.Client != m.opts.Client || rec.SkillDir != l.SkillDir {
			continue
		}
		var listed []string
		for name := range rec.Files {
			if rest, ok := strings.CutPrefix(name, l.SkillDir+"/"); ok {
				listed = append(listed, rest)
			}
		}
		if subset(have, listed) {
			return nil
		}
	}
	return blocking.New(blocking.HarnessInstallDirInvalid, "the skill folder for deployment %s holds files no oa installation recorded", deployment)
}

// writeSkill writes the skill folder whole: into a new folder next to it,
// renamed into place, so the client never sees half a skill.
func (m *MCPClient) writeSkill(l layout, deployment string, files map[string][]byte) error {
	abs := m.path(l.SkillDir)
	staged, err := atomicfile.Stage(abs, "installing", files, dirInvalid)
	if err != nil {
		return err
	}
	// The folder was checked before anything was written; check again now
	// that the projection is in place, in case it changed meanwhile.
	if err := m.checkSkillDir(l, deployment); err != nil {
		staged.Discard()
		return err
	}
	return staged.Commit(dirInvalid)
}

// subset reports whether every name of have is in listed.
func subset(have, listed []string) bool {
	for _, h := range have {
		if !slices.Contains(listed, h) {
			return false
		}
	}
	return true
}

// clearProjection removes the deployment's earlier projection folder when
// it holds only files its install record lists (some may be missing), so
// that Write can replace a damaged installation. A folder holding anything
// else is left for Write to refuse.
func (m *MCPClient) clearProjection(l layout, deployment string) error {
	abs := m.path(l.ProjectionDir)
	fi, err := os.Lstat(abs)
	if err != nil || !fi.IsDir() {
		return nil
	}
	rec, rerr := m.readRecord(m.path(l.RecordFile), deployment)
	if rerr != nil {
		return nil
	}
	have, err := listFiles(abs)
	if err != nil || len(have) == 0 {
		return nil
	}
	var listed []string
	for name := range rec.Files {
		if rest, ok := strings.CutPrefix(name, l.ProjectionDir+"/"); ok {
			listed = append(listed, rest)
		}
	}
	slices.Sort(listed)
	if !subset(have, listed) || slices.Equal(have, listed) {
		return nil // Write refuses the one, replaces the other whole
	}
	return os.RemoveAll(abs)
}

// configFile is a client's configuration file as read: its bytes (nil
// when it does not exist yet), whether it exists, and its mode.
type configFile struct {
	data   []byte
	exists bool
	perm   os.FileMode
}
