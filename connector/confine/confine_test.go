package confine

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestParseNet(t *testing.T) {
	for in, want := range map[string]string{"": "", "none": "", "any": NetAny, "443": "443", "8080, 443,443": "443,8080", "65535,1": "1,65535"} {
		if got, err := ParseNet(in); err != nil || got != want {
			t.Errorf("ParseNet(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"0", "65536", "https", "443,", "-1", "1e3", "all"} {
		if got, err := ParseNet(in); err == nil {
			t.Errorf("ParseNet(%q) = %q, want a refusal", in, got)
		}
	}
}

// FuzzParseNet: whatever is accepted is recorded in a form that parses to
// itself, with ports in range, sorted, each once.
func FuzzParseNet(f *testing.F) {
	for _, s := range []string{"none", "any", "443", "80,443", " 22 ,22", "0", "70000"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseNet(s)
		if err != nil {
			return
		}
		again, err := ParseNet(got)
		if err != nil || (again != got && !(got == "" && again == "")) {
			t.Fatalf("ParseNet(%q) = %q, which parses to %q, %v", s, got, again, err)
		}
		if got == "" || got == NetAny {
			return
		}
		prev := 0
		for p := range strings.SplitSeq(got, ",") {
			n, err := strconv.Atoi(p)
			if err != nil || n <= prev || n > 65535 {
				t.Fatalf("ParseNet(%q) = %q: not sorted, unique ports", s, got)
			}
			prev = n
		}
	})
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"1024": 1024, "512M": 512 << 20, "2G": 2 << 30, "2GiB": 2 << 30, "1gb": 1 << 30, "3k": 3 << 10, "1T": 1 << 40} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-1G", "G", "1P", "9999999999999T", "1.5G"} {
		if got, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) = %d, want a refusal", in, got)
		}
	}
}

// FuzzParseSize: an accepted size is positive and never overflows.
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"1G", "512MiB", "4096", "8T", "0", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if n, err := ParseSize(s); err == nil && n <= 0 {
			t.Fatalf("ParseSize(%q) = %d", s, n)
		}
	})
}

// TestBuildFindsInterpreter: a script's "#!/usr/bin/env NAME" adds env
// and NAME found on the server's PATH; the defaults and the private
// folders are in, the operator's home and $OA_HOME are not.
func TestBuildFindsInterpreter(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o700); err != nil {
		t.Fatal(err)
	}
	tool := filepath.Join(bin, "mytool")
	script := filepath.Join(dir, "server")
	for path, body := range map[string]string{tool: "#!/bin/sh\n", script: "#!/usr/bin/env -S mytool --flag\n"} {
		if err := os.WriteFile(path, []byte(body), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	s := Build(nil, 7, Target{Executable: script, PATH: "relative:" + bin, Home: "/h", Tmp: "/t"})
	for _, want := range []string{script, "/usr/bin/env", tool, "/usr", "/etc", "/proc/self"} {
		if !slices.Contains(s.Read, want) {
			t.Errorf("read %v lacks %s", s.Read, want)
		}
	}
	if !slices.Equal(s.Write, []string{"/dev/null", "/h", "/t"}) || s.Net != "" || s.OpenFiles != DefaultLimits.OpenFiles {
		t.Errorf("spec %+v", s)
	}
	if home, _ := os.UserHomeDir(); home != "" && (slices.Contains(s.Read, home) || slices.Contains(s.Write, home)) {
		t.Errorf("the operator's home is in the spec: %+v", s)
	}
}

func TestDescribe(t *testing.T) {
	if got := Describe(nil); !strings.HasPrefix(got, "default:") {
		t.Errorf("default: %s", got)
	}
	if got := Describe(&Profile{Unconfined: true}); !strings.HasPrefix(got, "UNCONFINED") {
		t.Errorf("unconfined: %s", got)
	}
	got := Describe(&Profile{Read: []string{"/srv/a"}, Net: "443", Limits: Limits{MemoryBytes: 1 << 30}})
	for _, want := range []string{"+read /srv/a", "tcp 443", "memory 1 GiB", "open files 1024"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
}

// TestNestedGrantsOfOtherAccessRefused: a --read folder inside a --write
// one, or the other way round, is refused at read[i]; the same access
// nested, and folders side by side, are not.
func TestNestedGrantsOfOtherAccessRefused(t *testing.T) {
	dir := t.TempDir()
	inner := filepath.Join(dir, "inner")
	other := filepath.Join(t.TempDir(), "other")
	for _, d := range []string{inner, other} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []Profile{{Read: []string{inner}, Write: []string{dir}}, {Read: []string{dir}, Write: []string{inner}}} {
		r := p.Check(CheckOptions{})
		if len(r) != 1 || r[0].Path != "confinement.read[0]" || !strings.Contains(r[0].Detail, "one inside the other") {
			t.Errorf("%+v: refused %v", p, r)
		}
	}
	for _, p := range []Profile{{Write: []string{dir, inner}}, {Read: []string{dir, inner}}, {Read: []string{other}, Write: []string{dir}}, {Read: []string{dir + "x"}, Write: []string{dir}}} {
		if r := p.Check(CheckOptions{}); r != nil && !strings.Contains(r.Error(), "does not exist") {
			t.Errorf("%+v: refused %v", p, r)
		}
	}
}

// TestDeniedCallsOfTheDefaultProfile: the default profile (nil) lists the
// filter's denials with the --net none layer, and an unconfined one none.
func TestDeniedCallsOfTheDefaultProfile(t *testing.T) {
	lines := DeniedCalls(nil, Holders{Namespaces: true})
	if len(lines) == 0 || !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, "socket ") }) {
		t.Errorf("default profile: %v", lines)
	}
	if lines := DeniedCalls(&Profile{Unconfined: true}, Holders{}); lines != nil {
		t.Errorf("unconfined: %v", lines)
	}
}
