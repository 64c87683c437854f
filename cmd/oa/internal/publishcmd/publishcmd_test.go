package publishcmd

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/cmd/oa/internal/cli"
	"github.com/oa-dev/oa/testkit/exampletest"
)

// TestCompileBoundsAreUsageErrors: a zero or negative bound is a mistake
// on the command line, never "no bound", and the error names the flag as
// the command spells it (push's budget flags carry "compile-").
func TestCompileBoundsAreUsageErrors(t *testing.T) {
	good := compileFlags{timeout: time.Second, memory: 1 << 20, maxIRBytes: 1 << 20, prefix: "compile-"}
	if opts, err := good.options(); err != nil || opts.Budget.Time != time.Second || opts.MaxIRBytes != 1<<20 {
		t.Fatalf("good bounds: %+v, %v", opts, err)
	}
	for flag, f := range map[string]compileFlags{
		"--compile-timeout":          {timeout: 0, memory: 1, maxIRBytes: 1, prefix: "compile-"},
		"--compile-max-memory-bytes": {timeout: time.Second, memory: -1, maxIRBytes: 1, prefix: "compile-"},
		"--max-ir-bytes":             {timeout: time.Second, memory: 1, maxIRBytes: 0, prefix: "compile-"},
		"--timeout":                  {timeout: -time.Second, memory: 1, maxIRBytes: 1},
	} {
		_, err := f.options()
		var usage cli.UsageError
		if !errors.As(err, &usage) {
			t.Errorf("%s: not a usage error: %v", flag, err)
			continue
		}
		if !strings.HasPrefix(err.Error(), flag+" must be a positive") {
			t.Errorf("%s: the error does not name the flag: %v", flag, err)
		}
	}
}

// TestSizeRefusalNamesTheFlag: on the command line the IR size limit is
// --max-ir-bytes, so its refusal says so; other refusals are left as they
// are.
func TestSizeRefusalNamesTheFlag(t *testing.T) {
	err := namingFlag(blocking.New(blocking.IRTooLargeForHosts, "the IR is larger than hosts accept"))
	if got := blocking.Refusals(err)[0].Detail; got != "the IR is larger than hosts accept (--max-ir-bytes)" {
		t.Errorf("size refusal: %q", got)
	}
	other := namingFlag(blocking.New(blocking.ReleaseRevoked, "revoked"))
	if got := blocking.Refusals(other)[0].Detail; got != "revoked" {
		t.Errorf("another refusal changed: %q", got)
	}
	if namingFlag(nil) != nil {
		t.Error("no error became one")
	}
}

// TestInitNeverOverwrites: init creates a missing folder, takes an empty
// one, and refuses a folder with anything in it or a path that is a file.
func TestInitNeverOverwrites(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "a", "b")
	if err := ensureEmptyDir(missing); err != nil {
		t.Fatalf("missing folder: %v", err)
	}
	if fi, err := os.Stat(missing); err != nil || !fi.IsDir() {
		t.Fatalf("missing folder not created: %v", err)
	}
	if err := ensureEmptyDir(missing); err != nil {
		t.Fatalf("empty folder: %v", err)
	}
	if err := os.WriteFile(filepath.Join(missing, "keep.cue"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	var usage cli.UsageError
	if err := ensureEmptyDir(missing); !errors.As(err, &usage) || !strings.Contains(err.Error(), "is not empty") {
		t.Errorf("non-empty folder: %v", err)
	}
	if err := ensureEmptyDir(filepath.Join(missing, "keep.cue")); !errors.As(err, &usage) || !strings.Contains(err.Error(), "is not a folder") {
		t.Errorf("a file: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(missing, "keep.cue")); string(b) != "x" {
		t.Errorf("the existing file changed: %q", b)
	}
}

// TestInspectSummary: inspect digests the canonical form and says when
// the file itself is not canonical; inputs are listed sorted, steps with
// their kind and capability.
func TestInspectSummary(t *testing.T) {
	res := exampletest.Compile(t, "clinic-triage")
	s := summarize(res.Worker, res.IR)
	if s.WorkerIRDigest != res.Digest || !s.Canonical {
		t.Fatalf("canonical IR: digest %s (want %s), canonical %v", s.WorkerIRDigest, res.Digest, s.Canonical)
	}
	indented := append(bytes.Clone(res.IR), '\n')
	if s2 := summarize(res.Worker, indented); s2.Canonical || s2.WorkerIRDigest != res.Digest {
		t.Errorf("a non-canonical file: canonical %v, digest %s (want the canonical form's %s)", s2.Canonical, s2.WorkerIRDigest, res.Digest)
	}
	for _, j := range s.Jobs {
		for i := 1; i < len(j.Inputs); i++ {
			if j.Inputs[i-1] > j.Inputs[i] {
				t.Errorf("job %s: inputs not sorted: %v", j.Name, j.Inputs)
			}
		}
		if len(j.Steps) == 0 || !strings.Contains(j.Steps[0], "(") {
			t.Errorf("job %s: steps %v", j.Name, j.Steps)
		}
	}
	var out bytes.Buffer
	printSummary(&out, summarize(res.Worker, indented))
	if !strings.Contains(out.String(), "(of the canonical form; the file itself is not canonical)") {
		t.Errorf("the summary of a non-canonical file does not say so:\n%s", out.String())
	}
	if !strings.HasPrefix(out.String(), res.Worker.Name+"@"+res.Worker.Version) {
		t.Errorf("the summary does not start with name@version:\n%s", out.String())
	}
}
