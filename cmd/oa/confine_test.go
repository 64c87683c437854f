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
	wantHas(t, "verify does not print the enforced level", out, "enforced   confined by Landlock ABI", "filesystem (Landlock ABI")
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
	if view.Config.Confinement != nil {
		t.Fatalf("show --json: config.confinement = %+v, want none (the default)", view.Config.Confinement)
	}
	if !strings.HasPrefix(view.Confinement, "default") {
		t.Fatalf("show --json: confinement = %q, want prefix default", view.Confinement)
	}
	if view.Enforced == nil {
		t.Fatalf("show --json: no enforced level: %+v", view)
	}
	if view.Enforced.Mode != confine.ModeConfined {
		t.Fatalf("show --json: enforced mode = %v, want %v", view.Enforced.Mode, confine.ModeConfined)
	}
	if view.Enforced.ABI < 6 {
		t.Fatalf("show --json: enforced Landlock ABI %d, want at least 6", view.Enforced.ABI)
	}

	dir := t.TempDir()
	p.ok("connection", "add-stdio", "probe", "--replace", "--connector", "probe.test", "--as", "Dr Ada", "--write", dir, "--net", "443,80", "--max-memory", "1G", "--", probe)
	out = p.ok("connection", "show", "probe")
	wantHas(t, "show does not print the profile", out, "+write "+dir, "tcp 80,443", "memory 1 GiB")
	if out := p.ok("policy", "check"); !strings.Contains(out, "confinement minimum: filesystem, network") {
		t.Fatalf("policy check does not print the default minimum:\n%s", out)
	}
	p.ok("connection", "verify", "probe", "--as", "Dr Ada")
	if confine.KernelABI() >= 6 {
		// A weaker kernel that still holds the minimum: verified, saying
		// what changed.
		t.Setenv(confine.ABIMaxEnv, "5")
		out := p.ok("connection", "verify", "probe", "--as", "Dr Ada")
		wantHas(t, "verify on a weaker kernel does not say what changed", out, "level changed since the last verification: Landlock ABI", "Landlock ABI 5 now; no longer holds abstract-sockets")
	}
	t.Setenv(confine.ABIMaxEnv, "3")
	out = p.refused("confinement_below_minimum", "connection", "verify", "probe", "--as", "Dr Ada")
	wantHas(t, "the refusal does not name the missing piece and what changed", out, "network (a TCP port list needs Landlock ABI 4", "Landlock ABI 3 now; no longer holds network", "nothing was started or recorded")
	out = p.ok("connection", "show", "probe")
	wantHas(t, "after a refused verify, show does not list the connection ready with its level now", out, "state      ready", "level      holds filesystem, ", "not held   network: ")
	if confine.SeccompSupported() {
		wantHas(t, "show does not list what the seccomp filter denies", out, "seccomp    filter ", "bpf")
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
	if shown.State != "ready" {
		t.Errorf("show --json: state = %q, want ready", shown.State)
	}
	if len(shown.Level.Guarantees) == 0 {
		t.Errorf("show --json: the level lists no guarantees: %+v", shown.Level)
	}
	if len(shown.Level.NotHeld) == 0 {
		t.Errorf("show --json: the level lists nothing not held: %+v", shown.Level)
	}
	if confine.SeccompSupported() && len(shown.Level.SeccompDenies) == 0 {
		t.Errorf("show --json: seccomp is supported but the level lists nothing it denies: %+v", shown.Level)
	}
	if t.Failed() {
		t.FailNow()
	}
	p.ok("connection", "add-stdio", "probe", "--replace", "--connector", "probe.test", "--as", "Dr Ada", "--unconfined", "--", probe)
	if out := p.ok("connection", "verify", "probe", "--as", "Dr Ada"); !strings.Contains(out, "enforced   unconfined") {
		t.Fatalf("an unconfined connection verifies without Landlock, and says so:\n%s", out)
	}
	if out := p.ok("connection", "show", "probe"); !strings.Contains(out, "UNCONFINED") {
		t.Fatalf("show does not print UNCONFINED:\n%s", out)
	}
}
