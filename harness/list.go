package harness

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"

	"github.com/oa-dev/oa/blocking"
)

// Entry states in a ClientListing.
const (
	// EntryMatches: the entry's installation matches the current binding
	// (every check of Inspect passed).
	EntryMatches = "matches"
	// EntryDiffers: the installation does not match, or there is no
	// install record for the entry; Codes says which checks failed.
	EntryDiffers = "differs"
	// EntryUnknown: the entry could not be inspected (its name is not a
	// deployment name, or the host cannot be opened); Detail says why.
	EntryUnknown = "unknown"
)

// clientBinaries are the executables on PATH that show a client is
// installed on this machine (a desktop app that puts none there is found
// by its configuration file only).
var clientBinaries = map[string][]string{
	ClientClaudeCode: {"claude"},
	ClientCursor:     {"cursor"},
	ClientVSCode:     {"code"},
	ClientCodex:      {"codex"},
	ClientGeminiCLI:  {"gemini"},
	ClientWindsurf:   {"windsurf"},
	ClientZed:        {"zed", "zeditor"},
}

// ListOptions say where List looks.
type ListOptions struct {
	// Home is $OA_HOME, whose bindings the entries are inspected against.
	Home string
	// Dir is the project folder of the project-level clients.
	Dir string
	// Getenv and GOOS are as in MCPClientOptions.
	Getenv func(string) string
	GOOS   string
	// LookPath finds a client's executable; nil means exec.LookPath.
	LookPath func(string) (string, error)
}

// ClientListing is one client on this machine, in one scope: whether it
// is installed and the oa entries its configuration file holds.
type ClientListing struct {
	Client string `json:"client"`
	// Scope is "project" (the file under ListOptions.Dir), "user", or
	// for Claude Code "local" (ScopeLocal: the user's ~/.claude.json,
	// for the project ListOptions.Dir).
	Scope string `json:"scope"`
	// ConfigFile is the client's MCP configuration file, ConfigFound
	// whether it exists.
	ConfigFile  string `json:"configFile"`
	ConfigFound bool   `json:"configFound"`
	// Binary is the client's executable found on PATH, if any.
	Binary string `json:"binary,omitempty"`
	// Installed is true when the configuration file or the executable
	// was found.
	Installed bool `json:"installed"`
	// Problem is why the configuration file could not be read (its
	// refusal code and detail), when it could not.
	Problem *blocking.Error `json:"problem,omitempty"`
	// Entries are the oa-NAME entries of the file, in its order.
	Entries []ListedEntry `json:"entries"`
}

// ListedEntry is one oa-NAME entry of a client's configuration and how it
// stands against the deployment's binding.
type ListedEntry struct {
	Name       string `json:"name"`
	Deployment string `json:"deployment"`
	// State is EntryMatches, EntryDiffers or EntryUnknown.
	State string `json:"state"`
	// Codes are the failed checks' codes (EntryDiffers).
	Codes []blocking.Code `json:"codes,omitempty"`
	// Detail says why the state is EntryUnknown.
	Detail string `json:"detail,omitempty"`
}

// List reports every client oa installs into (the generic one aside), in
// the order of Clients: a project-level client's file under opts.Dir, a
// user-level client's own, both for Codex, and Claude Code's local scope
// before its project's; whether the client is
// installed here (its configuration file or its executable found); and
// each oa-NAME entry with its state, from Inspect. It writes nothing.
func List(ctx context.Context, opts ListOptions) ([]ClientListing, error) {
	if opts.Home == "" || opts.Dir == "" {
		return nil, errors.New("harness: Home and Dir are required to list")
	}
	lookPath := opts.LookPath
	if lookPath == nil {
		lookPath = exec.LookPath
	}
	out := []ClientListing{}
	for _, client := range Clients {
		if client == ClientGeneric {
			continue
		}
		var scopes []string
		if client == ClientClaudeCode {
			scopes = append(scopes, ScopeLocal)
		}
		if ProjectLevel(client) {
			scopes = append(scopes, "project")
		}
		if UserLevel(client) {
			scopes = append(scopes, "user")
		}
		var binary string
		for _, name := range clientBinaries[client] {
			if p, err := lookPath(name); err == nil {
				binary = p
				break
			}
		}
		for _, scope := range scopes {
			dir, local := opts.Dir, ""
			switch scope {
			case "user":
				dir = ""
			case ScopeLocal:
				local = ScopeLocal
			}
			c := ClientListing{Client: client, Scope: scope, Binary: binary, Entries: []ListedEntry{}}
			m, err := NewMCPClient(MCPClientOptions{Home: opts.Home, Client: client, Dir: dir, Scope: local, Getenv: opts.Getenv, GOOS: opts.GOOS})
			if err != nil {
				refusal, err := asRefusal(err)
				if err != nil {
					return nil, err
				}
				c.Problem, c.Installed = refusal, binary != ""
				out = append(out, c)
				continue
			}
			if err := m.list(ctx, &c); err != nil {
				return nil, err
			}
			out = append(out, c)
		}
	}
	return out, nil
}

// list fills c from the client's configuration file and inspects each
// oa entry.
func (m *MCPClient) list(ctx context.Context, c *ClientListing) error {
	c.ConfigFile = m.path(m.layout("list", "").ServerFile)
	if _, err := os.Lstat(c.ConfigFile); err == nil {
		c.ConfigFound = true
	} else if !errors.Is(err, fs.ErrNotExist) {
		c.Problem = blocking.New(blocking.HarnessClientConfigInvalid, "the MCP configuration cannot be read")
	}
	c.Installed = c.ConfigFound || c.Binary != ""
	list, err := m.readServers()
	names, raws := list.names, list.raws
	if err != nil {
		refusal, err := asRefusal(err)
		if err != nil {
			return err
		}
		c.Problem = refusal
		return nil
	}
	for _, name := range names {
		deployment, ok := strings.CutPrefix(name, "oa-")
		if !ok {
			continue
		}
		e := ListedEntry{Name: name, Deployment: deployment}
		switch inst, err := m.Inspect(ctx, deployment); {
		case err != nil:
			e.State, e.Detail = EntryUnknown, oneLine(err)
		case !isOAEntry(name, raws[name]):
			e.State, e.Codes = EntryDiffers, []blocking.Code{blocking.HarnessServerEntryChanged}
		case inst.Matches:
			e.State = EntryMatches
		default:
			e.State = EntryDiffers
			for _, ch := range inst.Checks {
				if !ch.OK {
					e.Codes = append(e.Codes, ch.Code)
				}
			}
		}
		c.Entries = append(c.Entries, e)
	}
	return nil
}

// oneLine is err in one line: a refusal's detail and code, or the first
// line of any other error.
func oneLine(err error) string {
	if r, _ := asRefusal(err); r != nil {
		return fmt.Sprintf("%s [%s]", r.Detail, r.Code)
	}
	line, _, _ := strings.Cut(err.Error(), "\n")
	return line
}
