package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/compiler"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/schemas"
)

// TestForeignIRRefusedAlikeByEveryCaller: the three places that take IR
// they did not compile — oa inspect, oa push of an IR file, and an
// artifact's fetch — refuse the same crafted IR with the same code at the
// same field, because they share schemas.CheckIR.
func TestForeignIRRefusedAlikeByEveryCaller(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("OA_HOME", filepath.Join(dir, "home"))
	bundle := filepath.Join(dir, "bundle")
	if _, errOut, code := runCLI(t, "init", bundle); code != 0 {
		t.Fatalf("oa init: %d %s", code, errOut)
	}
	res, err := compiler.Compile(bundle)
	if err != nil {
		t.Fatal(err)
	}
	badVersion := *res.Worker
	badVersion.Version = "one" // decodes, but #Worker wants a semantic version
	schemaBytes, err := ir.Encode(&badVersion)
	if err != nil {
		t.Fatal(err)
	}
	unknownField := append([]byte(`{"extra":1,`), res.IR[1:]...) // strict decoding refuses it
	cases := []struct {
		name     string
		w        *ir.Worker
		b        []byte
		code     blocking.Code
		wantPath string
	}{
		{"schema", &badVersion, schemaBytes, blocking.IRSchemaViolation, "version"},
		{"malformed", res.Worker, unknownField, blocking.IRMalformed, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(dir, c.name+".json")
			if err := os.WriteFile(file, c.b, 0o644); err != nil {
				t.Fatal(err)
			}
			got := map[string]blocking.Error{
				"inspect": cliRefusal(t, "inspect", "--json", file),
				"push":    cliRefusal(t, "push", "--json", file, c.name+":v1"),
				"fetch":   fetchRefusal(t, c.w, c.b),
			}
			for caller, e := range got {
				if e.Code != c.code || (c.wantPath != "" && e.Path != c.wantPath) {
					t.Errorf("%s: refused %s at %q, want %s at %q", caller, e.Code, e.Path, c.code, c.wantPath)
				}
				if e.Path != got["inspect"].Path {
					t.Errorf("%s: located at %q, inspect at %q", caller, e.Path, got["inspect"].Path)
				}
			}
		})
	}
}

// cliRefusal runs oa with --json, requires exit 2 with one or more
// refusals, and returns the first.
func cliRefusal(t *testing.T, args ...string) blocking.Error {
	t.Helper()
	_, errOut, code := runCLI(t, args...)
	var j struct {
		Refusals []struct {
			Code blocking.Code
			Path string
		} `json:"refusals"`
	}
	what := "oa " + strings.Join(args, " ")
	wantExit(t, what, code, 2, "", errOut)
	wantJSON(t, what, errOut, &j)
	if len(j.Refusals) == 0 {
		t.Fatalf("%s: no refusals:\n%s", what, errOut)
	}
	return blocking.Error{Code: j.Refusals[0].Code, Path: j.Refusals[0].Path}
}

// fetchRefusal packs w with IR bytes b into a fresh layout (the library
// packs what it is given; the CLI would refuse it) and returns Fetch's
// first refusal.
func fetchRefusal(t *testing.T, w *ir.Worker, b []byte) blocking.Error {
	t.Helper()
	ctx := context.Background()
	ref, err := oci.ParseRef(filepath.Join(t.TempDir(), "layout")+":v1", oci.RefOptions{Layout: true})
	if err != nil {
		t.Fatal(err)
	}
	target, err := oci.Open(ctx, ref, oci.OpenOptions{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	desc, err := oci.Push(ctx, target, w, bytes.Clone(b), "v1", oci.PackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = oci.Fetch(ctx, target, desc, schemas.CheckFetchedIR)
	l := blocking.Refusals(err)
	if len(l) == 0 {
		t.Fatalf("Fetch = %v, want a refusal", err)
	}
	return *l[0]
}
