package runcmd

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

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
