package connection

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector"
)

// PreinstallFolder is the folder, inside a connection's private HOME,
// that --preinstall installs its server's npm package into.
const PreinstallFolder = ".oa-npm"

// preinstallTimeout bounds npm install at add time.
const preinstallTimeout = 10 * time.Minute

// maxPreinstallOutput bounds what of npm's output is kept (never shown
// whole: the refusal names the package and npm's exit only).
const maxPreinstallOutput = 64 << 10

// preinstall turns cfg's `npx [-y] PACKAGE[@VERSION] ARGS…` into the
// package installed ahead with the machine's npm (network now, at add
// time, only here) into the connection's private HOME, and cfg into the
// package's own command there with ARGS: the confined start then needs
// no network and reads the package from its own folder. Installed into a
// fresh folder first, it replaces an earlier one only once complete, so a
// failed install (connection_preinstall_failed) leaves things as they
// were. Install scripts are not run.
func preinstall(ctx context.Context, home, name string, cfg *connector.Config) error {
	if filepath.Base(cfg.Command) != "npx" {
		return blocking.New(blocking.ConnectionPreinstallFailed, "--preinstall installs an npx package (npx -y PACKAGE …); %s is not npx", filepath.Base(cfg.Command)).At("", "command")
	}
	args := cfg.Args
	for len(args) > 0 && (args[0] == "-y" || args[0] == "--yes" || args[0] == "-q" || args[0] == "--quiet") {
		args = args[1:]
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return blocking.New(blocking.ConnectionPreinstallFailed, "--preinstall needs npx [-y] PACKAGE[@VERSION] ARGS…: give the package first").At("", "args")
	}
	spec, rest := args[0], args[1:]
	pkg := packageName(spec)
	npm, err := exec.LookPath("npm")
	if err != nil {
		return blocking.New(blocking.ConnectionPreinstallFailed, "npm is not installed here")
	}
	homeDir := filepath.Join(PrivateDir(home, name), "home")
	if err := os.MkdirAll(homeDir, 0o700); err != nil {
		return blocking.New(blocking.ConnectionPreinstallFailed, "the connection's folder cannot be made")
	}
	tmp, err := os.MkdirTemp(homeDir, PreinstallFolder+".new-")
	if err != nil {
		return blocking.New(blocking.ConnectionPreinstallFailed, "the connection's folder cannot be written")
	}
	defer os.RemoveAll(tmp)
	ictx, cancel := context.WithTimeout(ctx, preinstallTimeout)
	defer cancel()
	cmd := exec.CommandContext(ictx, npm, "install", "--prefix", tmp, "--no-audit", "--no-fund", "--ignore-scripts", "--prefer-offline", "--loglevel=error", "--", spec)
	cmd.Stdout, cmd.Stderr = io.Discard, &capped{n: maxPreinstallOutput}
	if err := cmd.Run(); err != nil {
		return blocking.New(blocking.ConnectionPreinstallFailed, "npm install %s failed (%s)", pkg, exitOf(err))
	}
	bin, err := packageBin(tmp, pkg)
	if err != nil {
		return err
	}
	dir := filepath.Join(homeDir, PreinstallFolder)
	if err := os.RemoveAll(dir); err != nil {
		return blocking.New(blocking.ConnectionPreinstallFailed, "the earlier install cannot be replaced")
	}
	if err := os.Rename(tmp, dir); err != nil {
		return blocking.New(blocking.ConnectionPreinstallFailed, "the install cannot be moved into place")
	}
	cfg.Command = filepath.Join(dir, "node_modules", pkg, bin)
	cfg.Args = append([]string(nil), rest...)
	return nil
}

// packageName is the name of an npm package spec without its version.
func packageName(spec string) string {
	if i := strings.LastIndex(spec, "@"); i > 0 {
		return spec[:i]
	}
	return spec
}

// packageBin is the file, relative to the package's folder, of the
// package's command: its one bin, or the one named as the package.
func packageBin(prefix, pkg string) (string, error) {
	b, err := os.ReadFile(filepath.Join(prefix, "node_modules", pkg, "package.json"))
	if err != nil || len(b) > 1<<20 {
		return "", blocking.New(blocking.ConnectionPreinstallFailed, "the installed package %s has no readable package.json", pkg)
	}
	var p struct {
		Bin json.RawMessage `json:"bin"`
	}
	if json.Unmarshal(b, &p) != nil {
		return "", blocking.New(blocking.ConnectionPreinstallFailed, "the installed package %s has no readable package.json", pkg)
	}
	var one string
	if json.Unmarshal(p.Bin, &one) == nil && one != "" {
		return filepath.Clean(one), nil
	}
	var many map[string]string
	if json.Unmarshal(p.Bin, &many) == nil {
		short := pkg[strings.LastIndex(pkg, "/")+1:]
		if f, ok := many[short]; ok {
			return filepath.Clean(f), nil
		}
		if len(many) == 1 {
			for _, f := range many {
				return filepath.Clean(f), nil
			}
		}
	}
	return "", blocking.New(blocking.ConnectionPreinstallFailed, "the installed package %s names no single command (bin)", pkg)
}

// exitOf is how a command ended, without its output.
func exitOf(err error) string {
	if e, ok := err.(*exec.ExitError); ok {
		return "exit status " + strings.TrimPrefix(e.ProcessState.String(), "exit status ")
	}
	return "not started"
}

// capped keeps at most n bytes written to it and drops the rest.
type capped struct {
	b []byte
	n int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.n - len(c.b); room > 0 {
		c.b = append(c.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}
