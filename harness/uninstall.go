package harness

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/oa-dev/oa/blocking"
)

// Removal is what Uninstall removed and what it left, every path relative
// to Dir.
type Removal struct {
	Client     string `json:"client"`
	Deployment string `json:"deployment"`
	// Dir is the folder the paths are relative to (operator output only).
	Dir string `json:"dir"`
	// Removed lists the server entry ("NAME in FILE"), files and folders
	// removed, in the order they were removed.
	Removed []string `json:"removed"`
	// Left lists what was left because it is not as install wrote it,
	// each with why; the install record is kept while anything is left.
	Left []string `json:"left"`
}

// Err is nil when everything install wrote was removed, and otherwise
// harness_uninstall_incomplete naming what was left.
func (r *Removal) Err() error {
	if len(r.Left) == 0 {
		return nil
	}
	return blocking.New(blocking.HarnessUninstallIncomplete, "left: %s", strings.Join(r.Left, "; "))
}

// Uninstall removes exactly what Prepare wrote for the deployment, as its
// install record lists it: the server entry (and the configuration file
// or servers container, when install created them and nothing else is in
// them), the projection and skill files, the folders install created, and
// last the record. Anything a person changed or added since — an altered
// file, an edited entry, a new file — is left in place and named, with
// the record, and Err says so. A configuration file that does not parse
// is refused and nothing is removed. The host is not consulted, so a
// deployment can be uninstalled after its binding or host is gone.
func (m *MCPClient) Uninstall(_ context.Context, deployment string) (*Removal, error) {
	if err := checkName(deployment); err != nil {
		return nil, err
	}
	if m.homeErr != nil {
		return nil, m.homeErr
	}
	l := m.layout(deployment, "")
	rec, rerr := m.readRecord(m.path(l.RecordFile), deployment)
	if rerr != nil {
		return nil, rerr
	}
	if err := m.checkFolders(layoutPaths(rec.Server.File, rec.ProjectionDir, rec.SkillDir, l.RecordFile)...); err != nil {
		return nil, err
	}
	r := &Removal{Client: m.opts.Client, Deployment: deployment, Dir: m.root, Removed: []string{}, Left: []string{}}
	if err := m.removeServerEntry(l, rec, r); err != nil {
		return nil, err
	}
	m.removeFiles(rec, r)
	if len(r.Left) > 0 {
		return r, nil
	}
	if err := os.Remove(m.path(l.RecordFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, dirInvalid(err, "the install record cannot be removed")
	}
	r.Removed = append(r.Removed, l.RecordFile)
	m.removeFolders(rec, r)
	return r, nil
}

// removeServerEntry removes the deployment's entry when it is still the
// one installed.
func (m *MCPClient) removeServerEntry(l layout, rec *Record, r *Removal) error {
	cfg, err := m.readConfig(l)
	b, exists := cfg.data, cfg.exists
	if err != nil || !exists {
		return err
	}
	file := m.path(rec.Server.File)
	e, err := m.spec.format.get(file, b, rec.Server.Name)
	if err != nil {
		if refusal, _ := asRefusal(err); refusal != nil && refusal.Code == blocking.HarnessServerEntryChanged {
			r.Left = append(r.Left, rec.Server.Name+" in "+rec.Server.File+" (changed since install)")
			return nil
		}
		return err
	}
	if e == nil {
		return nil
	}
	if !sameEntry(*e, rec.Server.Entry) {
		r.Left = append(r.Left, rec.Server.Name+" in "+rec.Server.File+" (changed since install)")
		return nil
	}
	out, empty, err := m.spec.format.remove(file, b, rec.Server.Name, rec.Server.AddedKey, rec.Server.Gap)
	if err != nil {
		return err
	}
	r.Removed = append(r.Removed, rec.Server.Name+" in "+rec.Server.File)
	if !l.Merge || (rec.Server.Created && empty) {
		if err := os.Remove(file); err != nil {
			return dirInvalid(err, "the MCP configuration cannot be removed")
		}
		r.Removed = append(r.Removed, rec.Server.File)
		return nil
	}
	cfg, err = m.readConfig(l)
	perm := cfg.perm
	if err != nil {
		return err
	}
	return writeFileAtomic(file, out, perm)
}

// sameEntry reports whether a and b start the same command.
func sameEntry(a, b ServerEntry) bool {
	return a.Command == b.Command && slices.Equal(a.Args, b.Args) && maps.Equal(a.Env, b.Env)
}

// removeFiles removes every recorded file still as installed, and names
// the altered and added ones.
func (m *MCPClient) removeFiles(rec *Record, r *Removal) {
	for _, name := range slices.Sorted(maps.Keys(rec.Files)) {
		p := m.path(name)
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil || !fi.Mode().IsRegular() {
			r.Left = append(r.Left, name+" (not a regular file)")
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil || digest(b) != rec.Files[name] {
			r.Left = append(r.Left, name+" (altered since install)")
			continue
		}
		if err := os.Remove(p); err != nil {
			r.Left = append(r.Left, name+" (cannot be removed)")
			continue
		}
		r.Removed = append(r.Removed, name)
	}
	for _, dir := range []string{rec.ProjectionDir, rec.SkillDir} {
		if dir == "" {
			continue
		}
		have, _ := listFiles(m.path(dir))
		for _, name := range have {
			if _, ok := rec.Files[dir+"/"+name]; !ok {
				r.Left = append(r.Left, dir+"/"+name+" (added since install)")
			}
		}
	}
}

// removeFolders removes the projection and skill folders and the folders
// install created, deepest first, each only when empty.
func (m *MCPClient) removeFolders(rec *Record, r *Removal) {
	dirs := map[string]bool{}
	for name := range rec.Files {
		for d := path.Dir(name); d != "." && d != "/"; d = path.Dir(d) {
			if within(d+"/x", rec.ProjectionDir) || d == rec.ProjectionDir || (rec.SkillDir != "" && (d == rec.SkillDir || within(d+"/x", rec.SkillDir))) {
				dirs[d] = true
			}
		}
	}
	for _, d := range rec.CreatedFolders {
		dirs[d] = true
	}
	order := slices.Collect(maps.Keys(dirs))
	slices.SortFunc(order, func(a, b string) int {
		if c := strings.Count(b, "/") - strings.Count(a, "/"); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	for _, d := range order {
		if os.Remove(m.path(d)) == nil {
			r.Removed = append(r.Removed, d+"/")
		}
	}
	dir := m.root
	for range rec.CreatedRootLevels {
		if os.Remove(dir) != nil {
			return
		}
		r.Removed = append(r.Removed, dir+string(filepath.Separator))
		dir = filepath.Dir(dir)
	}
}

// maxRootLevels bounds how many folders above its files a client's own
// folder may have that install created (Claude Desktop's is three below
// the home folder on macOS).
const maxRootLevels = 3

// createdRootLevels counts the folders of the install root, from it
// upwards, that do not exist yet (0 for a project folder: it is the
// person's).
func (m *MCPClient) createdRootLevels() int {
	if m.spec.userRoot == nil {
		return 0
	}
	n := 0
	for d := m.root; n < maxRootLevels; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); !errors.Is(err, fs.ErrNotExist) {
			break
		}
		n++
	}
	return n
}

// createdFolders lists the folders (relative, slash-separated) that
// writing l's files would create under the root.
func (m *MCPClient) createdFolders(l layout) []string {
	seen := map[string]bool{}
	for _, p := range []string{l.ServerFile, l.ProjectionDir + "/x", l.SkillDir + "/x", l.RecordFile} {
		if p == "/x" {
			continue
		}
		for d := path.Dir(p); d != "." && d != "/"; d = path.Dir(d) {
			if _, err := os.Lstat(m.path(d)); errors.Is(err, fs.ErrNotExist) {
				seen[d] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// ancestorOf reports whether dir is a folder on the way to one of l's
// paths, so a record cannot name another folder for uninstall to remove.
func (l layout) ancestorOf(dir string) bool {
	for _, p := range []string{l.ServerFile, l.ProjectionDir + "/x", l.SkillDir + "/x", l.RecordFile} {
		if strings.HasPrefix(p, dir+"/") && dir != "~" && path.Clean(dir) == dir && !slices.Contains(strings.Split(dir, "/"), "..") {
			return true
		}
	}
	return false
}
