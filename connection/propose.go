package connection

import (
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/oa-dev/oa/ir"
)

// Server is an MCP server as another tool describes it (an MCP client's
// configuration, an MCP registry server.json): a command to start, or a
// remote URL. It carries the NAMES of its environment variables and
// headers, never their values.
type Server struct {
	Name    string
	Command string
	Args    []string
	// Env are the names of the variables the server is started with.
	Env []string
	// URL is a remote server's endpoint; Headers the names of the
	// headers it is sent.
	URL     string
	Headers []string
	// Package and Registry name the package the command runs (npm with
	// npx, pypi with uvx), when known.
	Package, Registry string
}

// Proposal is a connection proposed for a Server: the oa connection add
// line that records it, for the operator to read, change and run.
// Nothing is recorded by proposing.
type Proposal struct {
	Name      string   `json:"name"`
	Connector string   `json:"connector"`
	Command   string   `json:"command,omitempty"`
	Args      []string `json:"args,omitempty"`
	// Env are variable names: each is passed from oa's environment
	// (--env NAME), or recorded as a plain setting once the operator
	// gives its value (--env NAME=VALUE).
	Env     []string `json:"env,omitempty"`
	URL     string   `json:"url,omitempty"`
	Headers []string `json:"headers,omitempty"`
	// Read, Write and Preinstall are the suggested confinement profile.
	Read       []string `json:"read,omitempty"`
	Write      []string `json:"write,omitempty"`
	Preinstall bool     `json:"preinstall,omitempty"`
	// Notes say what the operator must decide or supply.
	Notes []string `json:"notes,omitempty"`
	// Add is the oa connection add-stdio or add-remote command line.
	Add string `json:"add"`
}

var nameRune = regexp.MustCompile(`[^a-z0-9]+`)

// proposedName is a connection name made from s.
func proposedName(s string) string {
	n := strings.Trim(nameRune.ReplaceAllString(strings.ToLower(s), "-"), "-")
	if n == "" || n[0] < 'a' || n[0] > 'z' {
		n = "server-" + n
	}
	if len(n) > 63 {
		n = strings.TrimRight(n[:63], "-")
	}
	return n
}

// Propose turns s into a connection proposal: its name and a connector
// id made from its package (npm.PKG, pypi.PKG) or name (local.NAME); its
// command and arguments (an argument that looks like a secret is left
// out, with a note, unless it names an existing file as add allows);
// its variables as --env NAME; a remote's URL without
// query or credentials, its headers as --header NAME --secret-file; and
// a confinement profile: --read of the folders its command needs,
// --write of the folders its arguments name, --preinstall for npx, --net
// any for uvx.
func Propose(s Server) Proposal {
	p := Proposal{Name: proposedName(s.Name), Env: s.Env}
	if s.Package == "" {
		s.Package, s.Registry = runnerPackage(s.Command, s.Args)
	}
	switch {
	case s.Package != "" && s.Registry != "":
		p.Connector = s.Registry + "." + strings.Trim(nameRune.ReplaceAllString(strings.ToLower(strings.TrimPrefix(s.Package, "@")), "-"), "-")
	default:
		p.Connector = "local." + p.Name
	}
	if len(p.Connector) > 64 {
		p.Connector = strings.TrimRight(p.Connector[:64], "-.")
	}
	if s.URL != "" {
		p.URL = s.URL
		if u, err := url.Parse(s.URL); err == nil && (u.RawQuery != "" || u.User != nil) {
			u.RawQuery, u.User = "", nil
			p.URL = u.String()
			p.Notes = append(p.Notes, "the URL's query or credentials were left out: send a secret as a --header with a --secret-file")
		}
		p.Headers = s.Headers
		p.Add = addLine(p)
		return p
	}
	p.Command = s.Command
	for i, a := range s.Args {
		if findings := ir.ScanText(a, false); len(findings) > 0 && !isPath(a) {
			p.Notes = append(p.Notes, "argument "+strconv.Itoa(i+1)+" looks like a secret and was left out: pass it as --env NAME or in a --secret-file")
			continue
		}
		p.Args = append(p.Args, a)
		if filepath.IsAbs(a) {
			if fi, err := os.Stat(a); err == nil && fi.IsDir() {
				p.Write = append(p.Write, a)
			} else if err == nil {
				p.Read = append(p.Read, a)
			}
		}
	}
	switch filepath.Base(s.Command) {
	case "npx":
		p.Preinstall = true
	case "uvx":
		p.Notes = append(p.Notes, "uvx fetches its package at each start: give the profile --net any (or install the package and give its command)")
	default:
		_, _, roots := unreadableRoots(s.Command, append(p.Read, p.Write...))
		p.Read = append(p.Read, roots...)
	}
	if len(p.Env) > 0 {
		p.Notes = append(p.Notes, "each --env NAME is read from oa's environment at start; for a plain setting, give its value: --env NAME=VALUE")
	}
	p.Add = addLine(p)
	return p
}

// addLine renders p as an oa connection add-remote or add-stdio command
// line.
func addLine(p Proposal) string {
	if p.URL != "" {
		w := []string{"oa", "connection", "add-remote", p.Name, p.URL, "--connector", p.Connector}
		for _, e := range p.Env {
			w = append(w, "--env", e)
		}
		for _, h := range p.Headers {
			w = append(w, "--header", h, "--secret-file", "FILE")
		}
		return shellJoin(append(w, "--as", "NAME"))
	}
	w := []string{"oa", "connection", "add-stdio", p.Name, "--connector", p.Connector}
	for _, e := range p.Env {
		w = append(w, "--env", e)
	}
	for _, r := range p.Read {
		w = append(w, "--read", r)
	}
	for _, r := range p.Write {
		w = append(w, "--write", r)
	}
	if p.Preinstall {
		w = append(w, "--preinstall")
	}
	w = append(w, "--as", "NAME", "--", p.Command)
	return shellJoin(append(w, p.Args...))
}

var plainWord = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

// shellJoin quotes each word for a POSIX shell where needed.
func shellJoin(words []string) string {
	out := make([]string, len(words))
	for i, w := range words {
		if plainWord.MatchString(w) {
			out[i] = w
		} else {
			out[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
	}
	return strings.Join(out, " ")
}

// runnerPackage is the package an npx or uvx command line runs, with its
// registry (npm, pypi), or "" for another command.
func runnerPackage(command string, args []string) (pkg, registry string) {
	switch filepath.Base(command) {
	case "npx":
		registry = "npm"
	case "uvx":
		registry = "pypi"
	default:
		return "", ""
	}
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			if registry == "npm" {
				return packageName(a), registry
			}
			name, _, _ := strings.Cut(a, "==")
			return name, registry
		}
	}
	return "", ""
}
