package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// TestRemoteVerifyFailurePrintsURLFix: a failed verify of a connection
// reached by URL (the URL answers, but not as an MCP server) prints a fix
// that speaks of the URL, the network and the server, not of a command
// to run by hand or a process tree ended.
func TestRemoteVerifyFailurePrintsURLFix(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	h := hosttest.New(t, nil)
	h.WriteRegistry(resolve.StarterRegistry(hosttest.Name))
	t.Setenv("OA_HOME", h.Home)
	cliOK(t, "connection", "add-remote", "records", srv.URL+"/mcp", "--connector", resolve.SandboxConnector, "--plain-http", "--as", "Dr Ada")
	_, errOut := cliRefused(t, "remote_start_failed", "connection", "verify", "records", "--as", "Dr Ada")
	for _, stdio := range []string{"by hand", "process tree", "stdio", "command"} {
		if strings.Contains(errOut, stdio) {
			t.Fatalf("the refusal of a remote verify speaks of %q:\n%s", stdio, errOut)
		}
	}
	for _, want := range []string{"remote_verify_failed", "URL", "network"} {
		if !strings.Contains(errOut, want) {
			t.Fatalf("the refusal of a remote verify lacks %q:\n%s", want, errOut)
		}
	}
}
