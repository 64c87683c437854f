package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oa-dev/oa/testkit/connectortest"
)

// TestRegistryConnectionResolveBind runs issue 5's commands as an operator
// would: the registry signed, a connection added and verified, the plan
// resolved, bound only with approval, inspected, and reported changed once
// the release is revoked. A secret passed by --env never reaches any output
// or the host's files.
func TestRegistryConnectionResolveBind(t *testing.T) {
	p := newPublisher(t)
	pinned := p.publish("clinic-triage")
	home := os.Getenv("OA_HOME")
	p.ok("host", "init", "--publisher-key", p.path("publisher.pub"), "--authority-key", p.path("authority.pub"))
	p.ok("admit", pinned, "--as", "Dr Ada")

	const secret = "s3cr3t-Value-7Qx9wLmZ"
	t.Setenv("RECORDS_TOKEN", secret)
	p.refused("registry_unreadable", "resolve", pinned, "--deployment", "clinic")
	for _, args := range [][]string{{"registry", "check"}, {"registry", "sign", "--as", "Dr Ada"}} {
		if out := p.refused("registry_unreadable", args...); !strings.Contains(out, "oa registry init") {
			t.Fatalf("oa %v on a fresh host does not point at oa registry init:\n%s", args, out)
		}
	}
	p.ok("registry", "init")
	p.refused("registry_unsigned", "resolve", pinned, "--deployment", "clinic")
	p.refused("person_missing", "registry", "sign")
	p.ok("registry", "sign", "--as", "Dr Ada")
	p.refused("connector_unavailable", "resolve", pinned, "--deployment", "clinic")

	// A secret on the command line is refused and nothing is recorded.
	out := p.refused("connection_invalid", "connection", "add-stdio", "sandbox", "--connector", "sandbox.records", "--as", "Dr Ada", "--", "builtin:sandbox-records", "--token=ghp_"+strings.Repeat("a1B2", 9))
	if strings.Contains(out, "ghp_") {
		t.Fatalf("refusal echoed the secret:\n%s", out)
	}
	if list := p.ok("connection", "list", "--json"); strings.TrimSpace(list) != "[]" {
		t.Fatalf("a refused add recorded a connection: %s", list)
	}
	p.ok("connection", "add-stdio", "sandbox", "--connector", "sandbox.records", "--as", "Dr Ada", "--", "builtin:sandbox-records")
	// A real MCP subprocess given the secret by --env, to a connector the
	// registry does not know (so it serves no plan).
	tools := connectortest.WriteTools(t, t.TempDir(), []connectortest.ToolSpec{{Name: "lookup", Description: "Look a record up."}})
	p.ok("connection", "add-stdio", "crm", "--connector", "crm.test", "--env", "RECORDS_TOKEN", "--as", "Dr Ada", "--read", filepath.Dir(tools), "--", connectortest.Server(t), "--tools", tools)
	p.ok("connection", "verify", "crm", "--as", "Dr Ada")
	p.refused("connection_exists", "connection", "add-stdio", "sandbox", "--connector", "sandbox.records", "--as", "Dr Ada", "--", "builtin:sandbox-records")
	p.refused("connection_revision_changed", "resolve", pinned, "--deployment", "clinic")
	p.ok("connection", "verify", "sandbox", "--as", "Dr Ada")
	p.refused("connection_unknown", "connection", "verify", "nope", "--as", "Dr Ada")

	var resolved struct {
		Digest string `json:"planDigest"`
		Plan   struct {
			Capabilities []struct {
				CapabilityKey string `json:"capabilityKey"`
				Risk          string `json:"risk"`
			} `json:"capabilities"`
		} `json:"plan"`
	}
	if err := json.Unmarshal([]byte(p.ok("resolve", pinned, "--deployment", "clinic", "--model", "claude-test", "--json")), &resolved); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(resolved.Digest, "sha256:") {
		t.Fatalf("resolve --json: digest %q, want prefix sha256:", resolved.Digest)
	}
	if len(resolved.Plan.Capabilities) != 2 {
		t.Fatalf("resolve --json: %d capabilities, want 2: %+v", len(resolved.Plan.Capabilities), resolved.Plan.Capabilities)
	}

	bindArgs := []string{"bind", pinned, "--deployment", "clinic", "--model", "claude-test", "--as", "Dr Ada"}
	// Without a terminal or --yes: the plan it would bind, then the
	// refusal.
	out = p.refused("consequential_not_approved", bindArgs...)
	wantHas(t, "bind without approval must show the plan first", out, resolved.Digest, "records.note.append", "--yes", "confinement of sandbox@")
	p.refused("binding_missing", "bind", "inspect", "clinic")
	text := p.ok(append(bindArgs, "--yes")...)
	wantHas(t, "bind must show the approved plan", text, resolved.Digest)
	if strings.Index(text, "records.note.append") > strings.Index(text, "records.read ") {
		t.Fatalf("bind must show the consequential capability (records.note.append) before records.read:\n%s", text)
	}
	if !strings.Contains(p.ok("bind", "inspect", "clinic"), "approved: the live plan is the bound one") {
		t.Fatal("inspect of an unchanged host")
	}

	digest := strings.SplitN(pinned, "@", 2)[1]
	p.ok("revoke", digest, "--reason", "withdrawn", "--as", "Dr Ada")
	out, errOut, code := runCLI(t, "bind", "inspect", "clinic", "--json")
	var report struct {
		Approved bool `json:"approved"`
		Changes  []struct {
			Link string `json:"link"`
		} `json:"changes"`
	}
	const what = "inspect after revocation"
	wantExit(t, what, code, 2, out, errOut)
	wantJSON(t, what, out, &report)
	if report.Approved {
		t.Fatalf("%s: approved = true, want false", what)
	}
	if len(report.Changes) == 0 {
		t.Fatalf("%s: no changes:\n%s", what, out)
	}
	if l := report.Changes[0].Link; l != "admission" {
		t.Fatalf("%s: first change at link %q, want admission", what, l)
	}
	wantHas(t, what, errOut, "plan_digest_mismatch")

	// Nothing anywhere holds the secret's value.
	for _, args := range [][]string{{"connection", "show", "crm"}, {"connection", "show", "sandbox"}, {"connection", "list", "--json"}, {"resolve", pinned, "--deployment", "clinic", "--json"}} {
		o, e, _ := runCLI(t, args...)
		if strings.Contains(o+e, secret) {
			t.Fatalf("oa %v printed the secret", args)
		}
	}
	filepath.WalkDir(home, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, _ := os.ReadFile(path); strings.Contains(string(b), secret) {
				t.Errorf("%s holds the secret's value", path)
			}
		}
		return nil
	})
}
