package connection

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/confine"
)

// checkCommand refuses (connection_command_unreadable) a confined stdio
// server whose command needs a folder its profile does not let it read:
// a command that is a link to a file elsewhere (npm's bin links, as nvm
// installs npx), a script or interpreter outside the system folders (a
// pyenv or nvm shim, a tool's script under ~/.local/bin, which needs its
// library tree) — each failed at start with a bare "Permission denied".
// It names the path and the exact --read that grants it. npx and uvx,
// which fetch their package at each start, are refused without network
// unless their package was installed ahead (--preinstall). A command not
// found here is left to verify, which starts it. private is the
// connection's private folder, which every start grants.
func checkCommand(cfg connector.Config, p *confine.Profile, private string) error {
	if cfg.Kind() != connector.KindProcess || cfg.Command == "" || p.IsUnconfined() {
		return nil
	}
	var granted []string
	if p != nil {
		granted = append(slices.Clone(p.Read), p.Write...)
	}
	exe, real, roots := unreadableRoots(cfg.Command, append(granted, private))
	if exe == "" {
		return nil
	}
	if len(roots) > 0 {
		reads := make([]string, len(roots))
		for i, r := range roots {
			reads[i] = "--read " + r
		}
		return blocking.New(blocking.ConnectionCommandUnreadable, "the command %s resolves to %s, which needs %s, outside what the confinement profile reads; add %s",
			cfg.Command, real, strings.Join(roots, " and "), strings.Join(reads, " ")).At("", "command")
	}
	if base := filepath.Base(exe); (base == "npx" || base == "uvx") && (p == nil || p.Net == "") {
		return blocking.New(blocking.ConnectionCommandUnreadable, "%s fetches its package at each start, and the confinement profile gives no network: add --preinstall to install it into the connection's own folder now (npx), or install the server and give its command", base).At("", "command")
	}
	return nil
}

// packageRoot is the folder a command at path needs whole: the prefix of
// an npm tree (before /lib/node_modules/), the parent of a bin or shims
// folder (a node or Python install, pyenv), or else its own folder.
func packageRoot(path string) string {
	if i := strings.Index(path, "/lib/node_modules/"); i > 0 {
		return path[:i]
	}
	dir := filepath.Dir(path)
	switch filepath.Base(dir) {
	case "bin", "sbin", "shims":
		return filepath.Dir(dir)
	}
	return dir
}

// isScript reports whether the file at path starts with "#!".
func isScript(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 2)
	n, _ := f.Read(head)
	return bytes.Equal(head[:n], []byte("#!"))
}

// unreadableRoots finds command in PATH and returns it (exe, "" when not
// found), its real path, and the folders it needs that neither the
// system folders nor granted let a confined server read.
func unreadableRoots(command string, granted []string) (exe, real string, roots []string) {
	exe, err := exec.LookPath(command)
	if err != nil {
		return "", "", nil
	}
	if exe, err = filepath.Abs(exe); err != nil {
		return "", "", nil
	}
	readable := func(path string) bool {
		for _, g := range append(slices.Clone(confine.DefaultReadPaths), granted...) {
			if path == g || strings.HasPrefix(path, strings.TrimSuffix(g, "/")+"/") {
				return true
			}
		}
		return false
	}
	need := func(path string) {
		if readable(path) {
			return
		}
		if r := packageRoot(path); !slices.Contains(roots, r) {
			roots = append(roots, r)
		}
	}
	if real, err = filepath.EvalSymlinks(exe); err != nil {
		return "", "", nil
	}
	if real != exe || isScript(real) {
		need(real)
	}
	for _, in := range confine.Interpreters(real, os.Getenv("PATH")) {
		if r, err := filepath.EvalSymlinks(in); err == nil && (r != in || isScript(r)) {
			need(r)
		}
	}
	return exe, real, roots
}
