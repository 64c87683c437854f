package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHelpGroupsCommandsByWhoUsesThem: oa --help lists the commands under
// publish, host, run, fleet and audit, in that order, and every top-level
// command but explain and version is in one of them.
func TestHelpGroupsCommandsByWhoUsesThem(t *testing.T) {
	out, _, code := runCLI(t, "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	last := -1
	for _, g := range commandGroups {
		at := strings.Index(out, g.title)
		if at < 0 || at < last {
			t.Fatalf("group %q missing or out of order:\n%s", g.title, out)
		}
		last = at
	}
	root := newRoot(&strings.Builder{}, &strings.Builder{})
	for _, c := range root.Commands() {
		switch c.Name() {
		case "explain", "version", "help", "completion":
			continue
		}
		if c.GroupID == "" {
			t.Errorf("command %s is in no group", c.Name())
		}
	}
	if !strings.Contains(out, "go install ./cmd/oa") {
		t.Error("the help does not say how to install oa")
	}
}

// TestContinueCommand: the quickstart's closing lines start oa the way
// it was started: oa when the oa on PATH is this one, go run ./cmd/oa
// under go run, else the executable's own path.
func TestContinueCommand(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "oa")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	onPath := func(string) (string, error) { return exe, nil }
	notOnPath := func(string) (string, error) { return "", errors.New("not found") }
	if cmd, goRun := continueCommand(exe, onPath); cmd != "oa" || goRun {
		t.Errorf("on PATH: %q %v", cmd, goRun)
	}
	if cmd, goRun := continueCommand(exe, notOnPath); cmd != exe || goRun {
		t.Errorf("not on PATH: %q %v", cmd, goRun)
	}
	other := filepath.Join(t.TempDir(), "oa")
	if err := os.WriteFile(other, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if cmd, _ := continueCommand(exe, func(string) (string, error) { return other, nil }); cmd != exe {
		t.Errorf("another oa on PATH: %q", cmd)
	}
	goRunExe := filepath.Join(os.TempDir(), "go-build1234", "b001", "exe", "oa")
	if cmd, goRun := continueCommand(goRunExe, onPath); cmd != "go run ./cmd/oa" || !goRun {
		t.Errorf("go run: %q %v", cmd, goRun)
	}
	spaced := filepath.Join(t.TempDir(), "my tools", "oa")
	if cmd, _ := continueCommand(spaced, notOnPath); cmd != "'"+spaced+"'" {
		t.Errorf("a path with a space is not quoted: %q", cmd)
	}
}

// TestIsGoRunBuild: under go run the executable the client
// would start is deleted when go run ends (harness install refuses it);
// only that layout is such a build.
func TestIsGoRunBuild(t *testing.T) {
	if !isGoRunBuild(filepath.Join(os.TempDir(), "go-build99", "b001", "exe", "oa")) || isGoRunBuild("/usr/local/bin/oa") || isGoRunBuild(filepath.Join(os.TempDir(), "go-build99", "b001", "oa.test")) {
		t.Fatal("isGoRunBuild")
	}
}
