package connection

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/oa-dev/oa/blocking"
)

// MaxServerJSON bounds a server.json oa reads.
const MaxServerJSON = 1 << 20

// serverJSON is the part of an MCP registry server.json
// (static.modelcontextprotocol.io/schemas/…/server.schema.json) that
// describes how to run the server.
type serverJSON struct {
	Name     string `json:"name"`
	Packages []struct {
		RegistryType string `json:"registryType"`
		Identifier   string `json:"identifier"`
		Version      string `json:"version"`
		RuntimeHint  string `json:"runtimeHint"`
		Transport    struct {
			Type string `json:"type"`
		} `json:"transport"`
		RuntimeArguments     []sjArgument `json:"runtimeArguments"`
		PackageArguments     []sjArgument `json:"packageArguments"`
		EnvironmentVariables []sjInput    `json:"environmentVariables"`
	} `json:"packages"`
	Remotes []struct {
		Type    string    `json:"type"`
		URL     string    `json:"url"`
		Headers []sjInput `json:"headers"`
	} `json:"remotes"`
}

// sjArgument is a server.json argument: positional (a value) or named
// (a flag name and maybe a value).
type sjArgument struct {
	Type       string `json:"type"`
	Name       string `json:"name"`
	Value      string `json:"value"`
	ValueHint  string `json:"valueHint"`
	IsRequired bool   `json:"isRequired"`
	Default    string `json:"default"`
}

// sjInput is an environment variable or header, taken by name only.
type sjInput struct {
	Name       string `json:"name"`
	IsRequired bool   `json:"isRequired"`
}

// FromServerJSON reads an MCP registry server.json (at most
// MaxServerJSON bytes) as a Server: its first stdio package of registry
// npm (run with npx -y, or its runtimeHint) or pypi (uvx), with its
// runtime and package arguments and the NAMES of its environment
// variables, or else its first streamable-http remote with its URL and
// header NAMES. required are the headers it marks required. A package
// argument that is required and has no value, or one that needs a
// variable substituted, is refused (server_json_invalid) naming it.
func FromServerJSON(b []byte) (s Server, required []string, err error) {
	bad := func(format string, args ...any) (Server, []string, error) {
		return Server{}, nil, blocking.New(blocking.ServerJSONInvalid, format, args...)
	}
	if len(b) > MaxServerJSON {
		return bad("the file is over %d bytes", MaxServerJSON)
	}
	var sj serverJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&sj); err != nil {
		return bad("the file is not a server.json object")
	}
	name := sj.Name[strings.LastIndex(sj.Name, "/")+1:]
	for i, p := range sj.Packages {
		if p.Transport.Type != "" && p.Transport.Type != "stdio" {
			continue
		}
		hint := p.RuntimeHint
		switch {
		case p.RegistryType == "npm" && (hint == "" || hint == "npx"):
			hint = "npx"
		case p.RegistryType == "pypi" && (hint == "" || hint == "uvx"):
			hint = "uvx"
		default:
			continue
		}
		if p.Identifier == "" {
			return bad("package %d has no identifier", i)
		}
		s = Server{Name: name, Command: hint, Package: p.Identifier, Registry: p.RegistryType}
		if name == "" {
			s.Name = p.Identifier
		}
		runtime, err := sjArgs(p.RuntimeArguments, "runtime")
		if err != nil {
			return Server{}, nil, err
		}
		if hint == "npx" && !slices.Contains(runtime, "-y") && !slices.Contains(runtime, "--yes") {
			runtime = append([]string{"-y"}, runtime...)
		}
		spec := p.Identifier
		if p.Version != "" {
			spec += map[string]string{"npx": "@", "uvx": "=="}[hint] + p.Version
		}
		pkgArgs, err := sjArgs(p.PackageArguments, "package")
		if err != nil {
			return Server{}, nil, err
		}
		s.Args = slices.Concat(runtime, []string{spec}, pkgArgs)
		for _, e := range p.EnvironmentVariables {
			if e.Name != "" {
				s.Env = append(s.Env, e.Name)
			}
		}
		return s, nil, nil
	}
	for _, r := range sj.Remotes {
		if r.Type != "streamable-http" || r.URL == "" {
			continue
		}
		if strings.Contains(r.URL, "{") {
			return bad("the remote's URL needs a variable substituted: give --url")
		}
		s = Server{Name: name, URL: r.URL}
		for _, h := range r.Headers {
			s.Headers = append(s.Headers, h.Name)
			if h.IsRequired {
				required = append(required, h.Name)
			}
		}
		return s, required, nil
	}
	return bad("no stdio package of registry npm (npx) or pypi (uvx), and no streamable-http remote")
}

// sjArgs renders server.json arguments as command-line words.
func sjArgs(args []sjArgument, kind string) ([]string, error) {
	var out []string
	for i, a := range args {
		value := a.Value
		if value == "" {
			value = a.Default
		}
		label := a.Name
		if label == "" {
			label = a.ValueHint
		}
		if strings.Contains(value, "{") {
			return nil, blocking.New(blocking.ServerJSONInvalid, "%s argument %d (%s) needs a variable substituted: add the server with -- and its command line instead", kind, i, label)
		}
		switch a.Type {
		case "named":
			if a.Name == "" {
				return nil, blocking.New(blocking.ServerJSONInvalid, "%s argument %d is named but has no name", kind, i)
			}
			if value == "" && a.IsRequired {
				return nil, blocking.New(blocking.ServerJSONInvalid, "%s argument %s is required and has no value: add the server with -- and its command line instead", kind, a.Name)
			}
			out = append(out, a.Name)
			if value != "" {
				out = append(out, value)
			}
		default:
			if value == "" {
				if a.IsRequired {
					return nil, blocking.New(blocking.ServerJSONInvalid, "%s argument %d (%s) is required and has no value: add the server with -- and its command line instead", kind, i, label)
				}
				continue
			}
			out = append(out, value)
		}
	}
	return out, nil
}
