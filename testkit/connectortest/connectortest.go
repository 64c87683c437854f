// Package connectortest runs real MCP stdio servers for tests: a small
// go-sdk server (./testserver), the confinement probe (./probeserver) and
// a server that tries to answer its own question on the host
// (./selfanswer), each built once per test binary with `go build` and
// cached by content in the interop tools' user cache, and the tool files
// the test server serves.
package connectortest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/oa-dev/oa/connector/confine"
	"github.com/oa-dev/oa/testkit/interoptest"
)

// ToolSpec is one tool the test server lists, exactly as given (defaults
// aside, see WriteTools), and how it answers a call.
type ToolSpec struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// InputSchema defaults to {"type":"object"} in WriteTools; set
	// NoInputSchema to list the tool without one.
	InputSchema   json.RawMessage `json:"inputSchema,omitempty"`
	NoInputSchema bool            `json:"-"`
	OutputSchema  json.RawMessage `json:"outputSchema,omitempty"`
	// Annotations are MCP tool annotations, such as {"readOnlyHint":true}.
	Annotations json.RawMessage `json:"annotations,omitempty"`
	// Result is the structuredContent of every call's answer; when nil the
	// answer echoes the call's arguments.
	Result json.RawMessage `json:"result,omitempty"`
	// Content, when set, is every call's answer: these content blocks (a
	// JSON array of MCP content: text, image, resource_link, …) and no
	// structuredContent, as most servers answer. Result is then unused.
	Content json.RawMessage `json:"content,omitempty"`
	// IsError marks every answer as a tool error.
	IsError bool `json:"isError,omitempty"`
	// Hang makes every call of the tool hang: it is never answered.
	Hang bool `json:"hang,omitempty"`
}

// WriteTools writes tools to a file in dir for the server's --tools flag and
// returns its path. An empty InputSchema becomes {"type":"object"} unless
// NoInputSchema is set.
func WriteTools(t testing.TB, dir string, tools []ToolSpec) string {
	t.Helper()
	out := make([]ToolSpec, len(tools))
	for i, ts := range tools {
		if ts.InputSchema == nil && !ts.NoInputSchema {
			ts.InputSchema = json.RawMessage(`{"type":"object"}`)
		}
		out[i] = ts
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.CreateTemp(dir, "tools-*.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	return f.Name()
}

// built is one server program, built once per test binary.
type built struct {
	once sync.Once
	path string
	err  error
}

var (
	testServer  built
	probeServer built
	selfAnswer  built
)

// Server returns the path of the built test server, building it on first
// use. A binary built earlier from the same sources (and the same Go and
// module files) is reused across test binaries.
func Server(t testing.TB) string {
	t.Helper()
	return testServer.get(t, "testserver")
}

// Probe returns the path of the built confinement probe (./probeserver):
// an MCP server whose tool "probe" tries to read, write and connect, in
// itself and in a child, and answers what the kernel said to each.
func Probe(t testing.TB) string {
	t.Helper()
	return probeServer.get(t, "probeserver")
}

// SelfAnswer returns the path of the built hostile asker (./selfanswer):
// an MCP server whose append_note asks the person a question and, while
// the run waits, tries to answer it itself on the host's question socket,
// reporting each attempt's reply (see its package doc for its flags).
func SelfAnswer(t testing.TB) string {
	t.Helper()
	return selfAnswer.get(t, "selfanswer")
}

func (b *built) get(t testing.TB, name string) string {
	t.Helper()
	b.once.Do(func() { b.path, b.err = build(name) })
	if b.err != nil {
		t.Fatalf("connectortest: building the %s: %v", name, b.err)
	}
	return b.path
}

// build compiles the program in folder name into a folder of the user
// cache named by a hash of its inputs.
func build(name string) (string, error) {
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("cannot find the connectortest sources")
	}
	src := filepath.Join(filepath.Dir(self), name)
	key, err := cacheKey(src)
	if err != nil {
		return "", err
	}
	// Kept with the interop tools in the user cache (interoptest.CacheDir),
	// not in the system temporary folder, which a test run leaves as it
	// found it.
	root, err := interoptest.CacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, "connectortest-"+name+"-"+key)
	bin := filepath.Join(dir, name)
	if fi, err := os.Stat(bin); err == nil && fi.Mode().IsRegular() {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	// Build to a private name and rename: test binaries of other packages
	// may build at the same time, and none may see a half-written file.
	tmp := fmt.Sprintf("%s.%d", bin, os.Getpid())
	cmd := exec.Command("go", "build", "-o", tmp, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%v\n%s", err, out)
	}
	return bin, os.Rename(tmp, bin)
}

// cacheKey hashes what the binary depends on: its source, the module
// files, the Go version and GOFLAGS.
func cacheKey(src string) (string, error) {
	h := sha256.New()
	fmt.Fprintln(h, runtime.Version(), os.Getenv("GOFLAGS"))
	files := []string{filepath.Join(src, "main.go")}
	root := filepath.Join(src, "..", "..", "..") // testkit/connectortest/testserver → module root
	files = append(files, filepath.Join(root, "go.mod"), filepath.Join(root, "go.sum"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", filepath.Base(f), len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// Allow is the confinement profile of a test's server: the default
// profile plus write access to paths (the folders of its tool, pid and env
// files). Tests of confinement itself use their own profiles.
func Allow(paths ...string) *confine.Profile {
	return &confine.Profile{Write: paths}
}
