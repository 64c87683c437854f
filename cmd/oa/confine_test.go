package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oa-dev/oa/connector/confine"
	"github.com/oa-dev/oa/testkit/connectortest"
)

// TestConnectionConfinementCLI: an operator adds a connection with the
// default profile, verifies it (the enforced level is printed), sees the
// profile in show and show --json; bad flags are refused at their field
// with nothing recorded; --unconfined is shown as such; an older kernel
// (forced through OA_LANDLOCK_ABI_MAX) that still holds the policy's
// minimum verifies, saying what changed; one below it refuses, naming the
// missing guarantee and what changed, and records nothing (the
// connection stays ready); show lists the level now and what seccomp
// denies.
func TestConnectionConfinementCLI(t *testing.T) {
	p := newPublisher(t)
	p.ok("host", "init", "--publisher-key", p.path("publisher.pub"), "--authority-key", p.path("authority.pub"))
	probe := connectortest.Probe(t)
	add := func(extra ...string) []string {
		return append(append([]string{"connection", "add-stdio", "probe", "--connector", "probe.test", "--as", "Dr Ada"}, extra...), "--", probe)
	}
	for flag, at := range map[string][]string{
		"confinement.read[0]":          {"--read", filepath.Join(t.TempDir(), "missing")},
		"confinement.net":              {"--net", "0"},
		"confinement.unconfined":       {"--unconfined", "--net", "any"},
		"confinement.limits.openFiles": {"--max-open-files", "1"},
	} {
		if out := p.refused("confinement_invalid", add(at...)...); !strings.Contains(out, flag) {
			t.Errorf("oa connection add %v: the refusal does not name %s:\n%s", at, flag, out)
		}
	}
	if list := p.ok("connection", "list", "--json"); strings.TrimSpace(list) != "[]" {
		t.Fatalf("a refused add recorded a connection: %s", list)
	}

	p.ok(add()...)
	if out := p.ok("connection", "show", "probe"); !strings.Contains(out, "confinement default: reads system folders") {
		t.Fatalf("show does not print the default profile:\n%s", out)
	}
	out := p.ok("connection", "verify", "probe", "--as", "Dr Ada")
	if !strings.Contains(out, "enforced   confined by Landlock ABI") || !strings.Contains(out, "filesystem (Landlock ABI") {
		t.Fatalf("verify does not print the enforced level:\n%s", out)
	}
	var view struct {
		Config struct {
			Confinement *confine.Profile `json:"confinement"`
		} `json:"config"`
		Confinement string         `json:"confinement"`
		Enforced    *confine.Level `json:"enforced"`
	}
	if err := json.Unmarshal([]byte(p.ok("connection", "show", "probe", "--json")), &view); err != nil {
		t.Fatal(err)
	}
	if view.Config.Confinement != nil || !strings.HasPrefix(view.Confinement, "default") || view.Enforced == nil || view.Enforced.Mode != confine.ModeConfined || view.Enforced.ABI < 6 {
		t.Fatalf("show --json: %+v", view)
	}

	dir := t.TempDir()
	p.ok("connection", "add-stdio", "probe", "--replace", "--connector", "probe.test", "--as", "Dr Ada", "--write", dir, "--net", "443,80", "--max-memory", "1G", "--", probe)
	if out := p.ok("connection", "show", "probe"); !strings.Contains(out, "+write "+dir) || !strings.Contains(out, "tcp 80,443") || !strings.Contains(out, "memory 1 GiB") {
		t.Fatalf("show does not print the profile:\n%s", out)
	}
	if out := p.ok("policy", "check"); !strings.Contains(out, "confinement minimum: filesystem, network") {
		t.Fatalf("policy check does not print the default minimum:\n%s", out)
	}
	p.ok("connection", "verify", "probe", "--as", "Dr Ada")
	if confine.KernelABI() >= 6 {
		// A weaker kernel that still holds the minimum: verified, saying
		// what changed.
		t.Setenv(confine.ABIMaxEnv, "5")
		if out := p.ok("connection", "verify", "probe", "--as", "Dr Ada"); !strings.Contains(out, "level changed since the last verification: Landlock ABI") || !strings.Contains(out, "Landlock ABI 5 now; no longer holds abstract-sockets") {
			t.Fatalf("verify on a weaker kernel does not say what changed:\n%s", out)
		}
	}
	t.Setenv(confine.ABIMaxEnv, "3")
	if out := p.refused("confinement_below_minimum", "connection", "verify", "probe", "--as", "Dr Ada"); !strings.Contains(out, "network (a TCP port list needs Landlock ABI 4") || !strings.Contains(out, "Landlock ABI 3 now; no longer holds network") || !strings.Contains(out, "nothing was started or recorded") {
		t.Fatalf("the refusal does not name the missing piece and what changed:\n%s", out)
	}
	out = p.ok("connection", "show", "probe")
	if !strings.Contains(out, "state      ready") || !strings.Contains(out, "level      holds filesystem, ") || !strings.Contains(out, "not held   network: ") {
		t.Fatalf("after a refused verify, show does not list the connection ready with its level now:\n%s", out)
	}
	if confine.SeccompSupported() && (!strings.Contains(out, "seccomp    filter ") || !strings.Contains(out, "bpf")) {
		t.Fatalf("show does not list what the seccomp filter denies:\n%s", out)
	}
	var shown struct {
		State string `json:"state"`
		Level struct {
			Guarantees    []string `json:"guarantees"`
			NotHeld       []string `json:"notHeld"`
			SeccompDenies []string `json:"seccompDenies"`
		} `json:"level"`
	}
	if err := json.Unmarshal([]byte(p.ok("connection", "show", "probe", "--json")), &shown); err != nil {
		t.Fatal(err)
	}
	if shown.State != "ready" || len(shown.Level.Guarantees) == 0 || len(shown.Level.NotHeld) == 0 || (confine.SeccompSupported() && len(shown.Level.SeccompDenies) == 0) {
		t.Fatalf("show --json: %+v", shown)
	}
	p.ok("connection", "add-stdio", "probe", "--replace", "--connector", "probe.test", "--as", "Dr Ada", "--unconfined", "--", probe)
	if out := p.ok("connection", "verify", "probe", "--as", "Dr Ada"); !strings.Contains(out, "enforced   unconfined") {
		t.Fatalf("an unconfined connection verifies without Landlock, and says so:\n%s", out)
	}
	if out := p.ok("connection", "show", "probe"); !strings.Contains(out, "UNCONFINED") {
		t.Fatalf("show does not print UNCONFINED:\n%s", out)
	}
}
