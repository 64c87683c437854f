package harness

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/tailscale/hujson"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connection"
)

// rawServer is a client's server entry as oa reads it to propose a
// connection: env and headers are kept as raw JSON only to take their
// names; their values are never decoded or kept.
type rawServer struct {
	Command string                     `json:"command"`
	Args    []string                   `json:"args"`
	Env     map[string]json.RawMessage `json:"env"`
	URL     string                     `json:"url"`
	// ServerURL (Windsurf) and HTTPURL (Gemini CLI) are other clients'
	// names for a remote server's URL.
	ServerURL string                     `json:"serverUrl"`
	HTTPURL   string                     `json:"httpUrl"`
	Headers   map[string]json.RawMessage `json:"headers"`
	// HTTPHeaders is Codex's name for the headers.
	HTTPHeaders map[string]json.RawMessage `json:"http_headers"`
}

func (r rawServer) server(name string) connection.Server {
	s := connection.Server{Name: name, Command: r.Command, Args: r.Args, URL: r.URL}
	for _, u := range []string{r.ServerURL, r.HTTPURL} {
		if s.URL == "" {
			s.URL = u
		}
	}
	for k := range r.Env {
		s.Env = append(s.Env, k)
	}
	for k := range r.Headers {
		s.Headers = append(s.Headers, k)
	}
	for k := range r.HTTPHeaders {
		s.Headers = append(s.Headers, k)
	}
	slices.Sort(s.Env)
	slices.Sort(s.Headers)
	if s.URL != "" {
		s.Command, s.Args, s.Env = "", nil, nil
	}
	return s
}

// Servers reads the MCP servers the client's own configuration file
// lists, in the file's order, for oa connection import to propose one
// connection each: command, arguments, the NAMES of environment variables
// and headers (their values are never read into anything oa keeps), or a
// remote's URL. oa's own entries (oa-NAME, running coordinator serve) are
// left out. file is the configuration file read; a missing file lists
// none, one that does not parse is refused with its line.
func (m *MCPClient) Servers() (file string, servers []connection.Server, err error) {
	list, err := m.readServers()
	file, names, raws := list.file, list.names, list.raws
	if err != nil {
		return file, nil, err
	}
	for _, name := range names {
		r := raws[name]
		if isOAEntry(name, r) {
			continue
		}
		if r.Command == "" && r.URL == "" && r.ServerURL == "" && r.HTTPURL == "" {
			continue
		}
		servers = append(servers, r.server(name))
	}
	return file, servers, nil
}

// isOAEntry reports whether the server named name is an oa entry: oa-NAME
// running coordinator serve.
func isOAEntry(name string, r rawServer) bool {
	return strings.HasPrefix(name, "oa-") && slices.Contains(r.Args, "coordinator") && slices.Contains(r.Args, "serve")
}

// readServers reads the client's configuration file: its path, the
// servers' names in the file's order and each one's entry. A missing file
// has none; one that does not parse is refused with its line.
func (m *MCPClient) readServers() (list serverList, err error) {
	var file string
	var names []string
	var raws map[string]rawServer
	if m.opts.Client == ClientGeneric {
		return serverList{"", nil, nil}, blocking.New(blocking.HarnessClientUnknown, "a generic client has no configuration file of its own to read: name the client")
	}
	l := m.layout("import", "")
	if m.homeErr != nil && strings.HasPrefix(l.ServerFile, homePrefix) {
		return serverList{"", nil, nil}, m.homeErr
	}
	file = m.path(l.ServerFile)
	cfg, err := m.readConfig(l)
	b, exists := cfg.data, cfg.exists
	if err != nil || !exists {
		return serverList{file, nil, nil}, err
	}
	raws = map[string]rawServer{}
	format := m.spec.format
	if local, ok := format.(claudeLocalFormat); ok {
		// Claude Code's local scope: the project's object of the file.
		proj, err := local.project(file, b)
		start, end, found := proj.start, proj.end, proj.found
		if err != nil || !found {
			return serverList{file, nil, nil}, err
		}
		b, format = b[start:end], local.inner
	}
	switch f := format.(type) {
	case jsonFormat:
		parsed, err := f.servers(file, b)
		srv := parsed.srv
		if err != nil || srv == nil {
			return serverList{file, nil, nil}, err
		}
		for _, mem := range srv.Members {
			lit, ok := mem.Name.Value.(hujson.Literal)
			if !ok {
				continue
			}
			var r rawServer
			if decodeValue(mem.Value, &r) != nil {
				return serverList{file, nil, nil}, refuseAt(file, b, mem.Value.StartOffset, "server %s is not an object of command, args and env, or url", lit.String())
			}
			names = append(names, lit.String())
			raws[lit.String()] = r
		}
	case tomlFormat:
		doc, err := decodeTOML(file, b)
		if err != nil {
			return serverList{file, nil, nil}, err
		}
		table, _ := doc[f.table].(map[string]any)
		for _, name := range slices.Sorted(func(yield func(string) bool) {
			for k := range table {
				if !yield(k) {
					return
				}
			}
		}) {
			j, _ := json.Marshal(table[name])
			var r rawServer
			if json.Unmarshal(j, &r) != nil {
				return serverList{file, nil, nil}, blocking.New(blocking.HarnessClientConfigInvalid, "server %s is not a table of command, args and env, or url", name).At(file, f.table+"."+name)
			}
			names = append(names, name)
			raws[name] = r
		}
	}
	return serverList{file, names, raws}, nil
}

// serverList is what readServers read: the configuration file's path,
// the servers' names in the file's order and each one's entry.
type serverList struct {
	file  string
	names []string
	raws  map[string]rawServer
}
