package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/testkit/fleettest"
	"github.com/oa-dev/oa/testkit/registrytest"
)

// exitFileEnv names the file the script command oa writes its exit
// status to, for the script command status to check.
const exitFileEnv = "OA_TEST_EXIT_FILE"

// scriptOA is oa as a testscript command: it runs the CLI and keeps its
// exit status for status.
func scriptOA() {
	code := run(os.Args[1:], os.Stdout, os.Stderr)
	if f := os.Getenv(exitFileEnv); f != "" {
		_ = os.WriteFile(f, []byte(strconv.Itoa(code)), 0o600)
	}
	os.Exit(code)
}

// TestScripts runs testdata/script/*.txtar, the CLI's behaviour end to
// end: one script per command group (publish, host, run, fleet, audit)
// and one for usage errors and exit statuses. Each runs with its own
// $OA_HOME; `status N` checks the exit status of the oa just run (0
// success, 2 refused or a usage error, 1 a fault). The other commands of
// scriptCmds carry what one step learns to the next (capture, expand) and
// stand in for what is no oa command (a registry, an auditor's keys, a
// tampered file).
func TestScripts(t *testing.T) {
	t.Parallel()
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "script"),
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("OA_HOME", filepath.Join(env.WorkDir, "home"))
			env.Setenv(exitFileEnv, filepath.Join(env.WorkDir, ".oa-exit"))
			env.Values[scriptTB{}] = env.T()
			return nil
		},
		Cmds: scriptCmds(),
	})
}

// cmdStatus is the script command `status N`: the oa run last exited
// with status N. The status is read once, so a later check never sees
// an earlier run's.
func cmdStatus(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: status N")
	}
	file := ts.Getenv(exitFileEnv)
	b, err := os.ReadFile(file)
	if err != nil {
		ts.Fatalf("no exit status of oa to check: %v", err)
	}
	_ = os.Remove(file)
	if got := strings.TrimSpace(string(b)); got != args[0] {
		ts.Fatalf("oa exited with status %s, want %s", got, args[0])
	}
}

// scriptTB is the key under which Setup keeps the script's testing.TB,
// for the commands that start test servers bound to the script's life.
type scriptTB struct{}

// scriptCmds are the script commands oa's scripts may use besides
// testscript's own.
func scriptCmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"status":     cmdStatus,
		"capture":    cmdCapture,
		"expand":     cmdExpand,
		"policykey":  cmdPolicyKey,
		"tamperblob": cmdTamperBlob,
		"registry":   cmdRegistry,
		"trustfleet": cmdTrustFleet,
	}
}

// cmdCapture is the script command `capture NAME [REGEXP]`: it sets
// $NAME to the last command's stdout, trimmed, or to REGEXP's first match
// in it, so a later step can name what an earlier one printed (a pushed
// REF@sha256:…, a digest) as a person pastes it.
func cmdCapture(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: capture NAME [REGEXP]")
	}
	value := strings.TrimSpace(ts.ReadFile("stdout"))
	if len(args) == 2 {
		value = regexp.MustCompile(args[1]).FindString(value)
		if value == "" {
			ts.Fatalf("stdout has no match for %s", args[1])
		}
	}
	ts.Setenv(args[0], value)
}

// cmdExpand is the script command `expand IN OUT`: it writes IN with
// every $NAME replaced by the script's value of NAME, for files (a fleet
// file) that must name what the script only learns as it runs.
func cmdExpand(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: expand IN OUT")
	}
	text := os.Expand(ts.ReadFile(args[0]), ts.Getenv)
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(text), 0o644))
}

// cmdPolicyKey is the script command `policykey NAME FILE`: it writes
// the public key $OA_HOME/policy.cue trusts as publisher or authority
// NAME to FILE, as the host hands an auditor the keys to verify with.
func cmdPolicyKey(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: policykey NAME FILE")
	}
	policy := ts.ReadFile(filepath.Join(ts.Getenv("OA_HOME"), host.PolicyFile))
	m := regexp.MustCompile(regexp.QuoteMeta(args[0]) + `: key: ("[^"\n]*")`).FindStringSubmatch(policy)
	if m == nil {
		ts.Fatalf("the policy trusts no key named %s", args[0])
	}
	pem, err := strconv.Unquote(m[1])
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(pem), 0o644))
}

// cmdTamperBlob is the script command `tamperblob BUNDLE FILE`: it
// rewrites the tar BUNDLE (an OCI layout, as oa audit export writes) with
// one bit flipped in the blob holding FILE's bytes (named by their
// sha256), as an edit of that document after export would leave it.
func cmdTamperBlob(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: tamperblob BUNDLE FILE")
	}
	sum := sha256.Sum256([]byte(ts.ReadFile(args[1])))
	blob := "blobs/sha256/" + hex.EncodeToString(sum[:])
	file := ts.MkAbs(args[0])
	b, err := os.ReadFile(file)
	ts.Check(err)
	var out bytes.Buffer
	r, w := tar.NewReader(bytes.NewReader(b)), tar.NewWriter(&out)
	tampered := false
	for {
		hdr, err := r.Next()
		if err == io.EOF {
			break
		}
		ts.Check(err)
		body, err := io.ReadAll(r)
		ts.Check(err)
		if hdr.Name == blob && len(body) > 0 {
			body[len(body)-1] ^= 1
			tampered = true
		}
		ts.Check(w.WriteHeader(hdr))
		_, err = w.Write(body)
		ts.Check(err)
	}
	ts.Check(w.Close())
	if !tampered {
		ts.Fatalf("%s holds no blob of %s's bytes", args[0], args[1])
	}
	ts.Check(os.WriteFile(file, out.Bytes(), 0o644))
}

// cmdRegistry is the script command `registry`: it starts an in-process
// OCI registry on loopback (testkit/registrytest), sets $REGISTRY to its
// HOST:PORT and stops it when the script ends.
func cmdRegistry(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: registry")
	}
	tb, ok := ts.Value(scriptTB{}).(testing.TB)
	if !ok {
		ts.Fatalf("registry: the script has no testing.TB")
	}
	reg := registrytest.Start(tb)
	ts.Defer(reg.Stop)
	ts.Setenv("REGISTRY", reg.Host())
}

// cmdTrustFleet is the script command `trustfleet PUB`: it appends to
// $OA_HOME/policy.cue a fleet section named clinics that trusts the fleet
// key PUB and lets it pre-approve bindings, as the host's operator writes
// it by hand.
func cmdTrustFleet(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: trustfleet PUB")
	}
	section := fleettest.FleetSection("clinics", []byte(ts.ReadFile(args[0])), true)
	f, err := os.OpenFile(filepath.Join(ts.Getenv("OA_HOME"), host.PolicyFile), os.O_APPEND|os.O_WRONLY, 0)
	ts.Check(err)
	_, err = f.WriteString(section)
	ts.Check(errors.Join(err, f.Close()))
}
