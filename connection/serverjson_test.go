package connection_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connection"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// TestFromServerJSON (issue 39): an MCP registry server.json becomes a
// server to add: a pypi package run with uvx and its arguments, a
// remote's URL with its header names and which are required; a required
// argument with no value is server_json_invalid, naming it.
func TestFromServerJSON(t *testing.T) {
	s, _, err := connection.FromServerJSON([]byte(`{"name": "io.github.x/fetch", "packages": [
		{"registryType": "oci", "identifier": "docker.io/x/fetch"},
		{"registryType": "pypi", "identifier": "mcp-server-fetch", "version": "1.2.0", "runtimeHint": "uvx",
		 "packageArguments": [{"type": "named", "name": "--user-agent", "value": "oa"}, {"type": "positional", "valueHint": "optional"}],
		 "environmentVariables": [{"name": "FETCH_TOKEN", "isSecret": true, "isRequired": true}]}]}`))
	if err != nil || s.Command != "uvx" || !slices.Equal(s.Args, []string{"mcp-server-fetch==1.2.0", "--user-agent", "oa"}) || !slices.Equal(s.Env, []string{"FETCH_TOKEN"}) || s.Registry != "pypi" {
		t.Fatalf("pypi package: %+v %v", s, err)
	}

	s, required, err := connection.FromServerJSON([]byte(`{"name": "io.github.x/everything", "remotes": [
		{"type": "sse", "url": "https://old.example.com/sse"},
		{"type": "streamable-http", "url": "https://mcp.example.com/mcp", "headers": [{"name": "X-Api-Key", "isRequired": true, "isSecret": true, "value": "never-read"}, {"name": "X-Trace"}]}]}`))
	if err != nil || s.URL != "https://mcp.example.com/mcp" || !slices.Equal(s.Headers, []string{"X-Api-Key", "X-Trace"}) || !slices.Equal(required, []string{"X-Api-Key"}) {
		t.Fatalf("remote: %+v %v %v", s, required, err)
	}
	if p := connection.Propose(s); strings.Contains(p.Add, "never-read") || !strings.Contains(p.Add, "--header X-Api-Key --secret-file FILE") {
		t.Fatalf("remote proposal: %s", p.Add)
	}

	_, _, err = connection.FromServerJSON([]byte(`{"name": "x", "packages": [{"registryType": "npm", "identifier": "x", "packageArguments": [{"type": "positional", "valueHint": "root_dir", "isRequired": true}]}]}`))
	if !hosttest.HasCode(t, err, blocking.ServerJSONInvalid) || !strings.Contains(blocking.Refusals(err)[0].Detail, "root_dir") {
		t.Fatalf("a required argument with no value: %v", err)
	}
}
