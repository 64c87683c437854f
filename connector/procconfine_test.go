package connector_test

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/confine"
	"github.com/oa-dev/oa/connector/proc"
	"github.com/oa-dev/oa/testkit/connectortest"
	"github.com/oa-dev/oa/testkit/cputime"
)

// outcome is the probe server's answer for one process.
type outcome struct {
	Read, Write, Connect, UDP string
	Home, Tmp                 string
	OpenFiles                 uint64
	HomeWritable              bool
	Allocate, Files, Spawn    string
	Hostile                   map[string]string
	Unix                      []string
}

type report struct {
	Server outcome
	Child  *outcome
}

// probeScene is what the probe is pointed at: a secret file in one folder,
// a folder to write in, and two loopback TCP listeners.
type probeScene struct {
	secretDir, secret, writeDir, target string
	addr, otherAddr                     string
	udp                                 string
}

func newProbeScene(t *testing.T) *probeScene {
	t.Helper()
	s := &probeScene{secretDir: filepath.Join(t.TempDir(), "outside"), writeDir: filepath.Join(t.TempDir(), "drop")}
	for _, d := range []string{s.secretDir, s.writeDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	s.secret, s.target = filepath.Join(s.secretDir, "secret"), filepath.Join(s.writeDir, "written")
	if err := os.WriteFile(s.secret, []byte("operator secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.addr, s.otherAddr = listen(t), listen(t)
	u, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	s.udp = u.LocalAddr().String()
	return s
}

// listen accepts (and closes) TCP connections on a loopback port.
func listen(t *testing.T) string {
	t.Helper()
	return listenOn(t, "tcp", "127.0.0.1:0")
}

// listenOn accepts (and closes) connections on network's address until
// the test ends, and returns the address listened on.
func listenOn(t *testing.T, network, address string) string {
	t.Helper()
	l, err := net.Listen(network, address)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return l.Addr().String()
}

func port(t *testing.T, addr string) string {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// runProbe starts the probe under profile and has it try the scene's
// read, write and connect, in itself and in a child.
func runProbe(t *testing.T, s *probeScene, profile *confine.Profile, opts connector.Options) report {
	t.Helper()
	return runProbeWith(t, connectortest.Probe(t), s, profile, opts)
}

// runProbeOf is runProbe of the probe built at probe.
func runProbeOf(t *testing.T, probe string, s *probeScene, profile *confine.Profile) report {
	t.Helper()
	return runProbeWith(t, probe, s, profile, connector.Options{})
}

func runProbeWith(t *testing.T, probe string, s *probeScene, profile *confine.Profile, opts connector.Options) report {
	t.Helper()
	r := callProbe(t, probe, profile, opts, map[string]any{"read": s.secret, "write": s.target, "connect": s.addr, "udp": s.udp, "child": true})
	// The scene lies under /tmp, which a server with a mount namespace of
	// its own does not see (TestSocketFoldersHidden): a file it cannot
	// reach is absent there rather than refused; both are "denied" here.
	for _, o := range []*outcome{&r.Server, r.Child} {
		for _, v := range []*string{&o.Read, &o.Write} {
			if *v == "absent" {
				*v = "denied"
			}
		}
	}
	return r
}

// TestConfinementDefaultBlocksProbe: under the default profile the probe
// and its child can neither read a file outside the profile, nor write
// outside it, nor connect to a TCP port; they get HOME and TMPDIR of their
// own, and the open-files limit.
func TestConfinementDefaultBlocksProbe(t *testing.T) {
	s := newProbeScene(t)
	private := filepath.Join(t.TempDir(), "private")
	r := runProbe(t, s, nil, connector.Options{PrivateDir: private})
	for who, o := range map[string]outcome{"server": r.Server, "child": *r.Child} {
		if o.Read != "denied" || o.Write != "denied" || o.Connect != "denied" {
			t.Errorf("%s: read %q, write %q, connect %q; want all denied", who, o.Read, o.Write, o.Connect)
		}
		if o.Home != filepath.Join(private, proc.PrivateHome) || o.Tmp != filepath.Join(private, proc.PrivateTmp) || !o.HomeWritable {
			t.Errorf("%s: HOME %q TMPDIR %q writable %v; want the private folders", who, o.Home, o.Tmp, o.HomeWritable)
		}
		if o.OpenFiles != uint64(confine.DefaultLimits.OpenFiles) {
			t.Errorf("%s: open files limit %d, want %d", who, o.OpenFiles, confine.DefaultLimits.OpenFiles)
		}
	}
	if _, err := os.Stat(s.target); !os.IsNotExist(err) {
		t.Errorf("the blocked write left a file: %v", err)
	}
	// --net none holds for UDP too, which Landlock does not cover before
	// ABI 10: the seccomp filter refuses every socket but unix and
	// netlink ones, and where oa may make one (as root here) the server
	// has a network namespace of its own as well.
	level, err := connector.Enforcement(connector.Config{Command: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 && !strings.Contains(level.String(), "own network namespace") {
		t.Fatalf("running as root, --net none gives no network namespace: %s", level)
	}
	for who, o := range map[string]outcome{"server": r.Server, "child": *r.Child} {
		if o.UDP != "denied" {
			t.Errorf("%s: udp %q, want denied", who, o.UDP)
		}
	}
}

// TestConfinementAllowsExactly: --read, --write and --net each open exactly
// what they name, for the server and its child, and nothing more.
func TestConfinementAllowsExactly(t *testing.T) {
	s := newProbeScene(t)
	cases := []struct {
		name                 string
		profile              confine.Profile
		read, write, connect string
	}{
		{"read", confine.Profile{Read: []string{s.secretDir}}, "allowed", "denied", "denied"},
		{"read file", confine.Profile{Read: []string{s.secret}}, "allowed", "denied", "denied"},
		{"write", confine.Profile{Write: []string{s.writeDir}}, "denied", "allowed", "denied"},
		{"net port", confine.Profile{Net: port(t, s.addr)}, "denied", "denied", "allowed"},
		{"net other port", confine.Profile{Net: port(t, s.otherAddr)}, "denied", "denied", "denied"},
		{"net any", confine.Profile{Net: confine.NetAny}, "denied", "denied", "allowed"},
		{"unconfined", confine.Profile{Unconfined: true}, "allowed", "allowed", "allowed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			os.Remove(s.target)
			profile := c.profile
			r := runProbe(t, s, &profile, connector.Options{})
			for who, o := range map[string]outcome{"server": r.Server, "child": *r.Child} {
				if o.Read != c.read || o.Write != c.write || o.Connect != c.connect {
					t.Errorf("%s: read %q, write %q, connect %q; want %s, %s, %s", who, o.Read, o.Write, o.Connect, c.read, c.write, c.connect)
				}
			}
		})
	}
}

// TestConfinementUnavailable: a kernel with no Landlock at all refuses a
// confined start; an unconfined connection still starts.
func TestConfinementUnavailable(t *testing.T) {
	t.Setenv(confine.ABIMaxEnv, "0")
	_, err := connector.Open(context.Background(), connector.Config{Command: connectortest.Probe(t)}, connector.Options{})
	if r := refusal(t, err, blocking.ConfinementUnavailable); !strings.Contains(r.Detail, "no Landlock") {
		t.Errorf("detail %q does not say there is no Landlock", r.Detail)
	}
	if _, err := connector.Enforcement(connector.Config{Command: "x"}); blocking.Refusals(err) == nil {
		t.Errorf("Enforcement did not refuse: %v", err)
	}
	s, err := connector.Open(context.Background(), connector.Config{Command: connectortest.Probe(t), Confinement: &confine.Profile{Unconfined: true}}, connector.Options{})
	if err != nil {
		t.Fatalf("an unconfined connection must start without Landlock: %v", err)
	}
	s.Close()
}

// probeLimits starts the probe under profile and has it, and its child,
// try to map allocate bytes, hold files open and run spawn processes.
func probeLimits(t *testing.T, profile *confine.Profile, allocate int64, files, spawn int) report {
	t.Helper()
	return callProbe(t, connectortest.Probe(t), profile, connector.Options{}, map[string]any{"allocate": allocate, "files": files, "spawn": spawn, "child": true})
}

// callProbe starts the probe built at probe under profile with opts, makes
// one probe call with args and returns its report (with the child's, when
// args asks for one).
func callProbe(t *testing.T, probe string, profile *confine.Profile, opts connector.Options, args map[string]any) report {
	t.Helper()
	ctx := context.Background()
	sess, err := connector.Open(ctx, connector.Config{Command: probe, Confinement: profile}, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	res, err := sess.Call(ctx, "probe", args)
	if err != nil {
		t.Fatal(err)
	}
	var r report
	if err := json.Unmarshal(res.Structured, &r); err != nil || (args["child"] == true && r.Child == nil) {
		t.Fatalf("probe answered %s (%v)", res.Structured, err)
	}
	return r
}

// TestConfinementLimits: the resource bounds of a profile hold on this
// kernel, in the server and in its child. Open files (RLIMIT_NOFILE) and
// memory (RLIMIT_AS, address space) hold everywhere: the probe cannot
// open more files or map more memory than the profile's bound, though it
// can stay within them, and unconfined it can go beyond. Processes hold
// only where the tree's cgroup has the pids controller, as the level
// says: there the probe cannot run more; elsewhere the level says the
// bound is not held, and it is not.
func TestConfinementLimits(t *testing.T) {
	limits := confine.Limits{OpenFiles: 64, MemoryBytes: 1 << 30, Processes: 32}
	bounded := &confine.Profile{Limits: limits}
	level, err := connector.Enforcement(connector.Config{Command: "x", Confinement: bounded})
	if err != nil {
		t.Fatal(err)
	}
	pidsHeld := strings.Contains(level.String(), "processes 32 (cgroup pids.max)")
	if !pidsHeld && !strings.Contains(level.String(), "processes 32 not held") {
		t.Fatalf("the level says nothing of the process bound: %s", level)
	}
	t.Logf("level: %s", level)

	beyond := probeLimits(t, bounded, 2<<30, 100, 40)
	spawnWant := map[bool]string{true: "no more processes", false: "allowed"}[pidsHeld]
	for who, o := range map[string]outcome{"server": beyond.Server, "child": *beyond.Child} {
		if o.Allocate != "no memory" || o.Files != "too many files" || o.Spawn != spawnWant {
			t.Errorf("%s beyond the bounds: allocate %q, files %q, spawn %q; want no memory, too many files, %s", who, o.Allocate, o.Files, o.Spawn, spawnWant)
		}
	}
	within := probeLimits(t, bounded, 128<<20, 32, 2)
	for who, o := range map[string]outcome{"server": within.Server, "child": *within.Child} {
		if o.Allocate != "allowed" || o.Files != "allowed" || o.Spawn != "allowed" {
			t.Errorf("%s within the bounds: allocate %q, files %q, spawn %q; want all allowed", who, o.Allocate, o.Files, o.Spawn)
		}
	}
	free := probeLimits(t, &confine.Profile{Unconfined: true}, 2<<30, 100, 40)
	for who, o := range map[string]outcome{"server": free.Server, "child": *free.Child} {
		if o.Allocate != "allowed" || o.Files != "allowed" || o.Spawn != "allowed" {
			t.Errorf("%s unconfined: allocate %q, files %q, spawn %q; want all allowed", who, o.Allocate, o.Files, o.Spawn)
		}
	}
}

// TestConfinementLevel: the level names the ABI, the rules and the limits.
func TestConfinementLevel(t *testing.T) {
	l, err := connector.Enforcement(connector.Config{Command: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if l.Mode != confine.ModeConfined || l.ABI < 6 || !l.Holds(confine.GuaranteeFilesystem) || !l.Holds(confine.GuaranteeNetwork) || !strings.Contains(l.String(), "open files "+strconv.Itoa(int(confine.DefaultLimits.OpenFiles))) {
		t.Errorf("level %s", l)
	}
	if l, _ := connector.Enforcement(connector.Config{Command: "x", Confinement: &confine.Profile{Unconfined: true}}); l.String() != confine.ModeUnconfined {
		t.Errorf("unconfined level %s", l)
	}
	if l, _ := connector.Enforcement(connector.Config{Command: connector.SandboxCommand}); l.Mode != confine.ModeInProcess {
		t.Errorf("sandbox level %s", l)
	}
}

// BenchmarkOpenConfinement: a downstream session start (connector.Open,
// tools/list, Close) of the test server confined by its default profile
// (with its own network namespace, as root), with --net any (no namespace)
// and unconfined; the differences are the network namespace and the
// launcher step (docs/PERFORMANCE.md, "Confinement (issue 23)").
func BenchmarkOpenConfinement(b *testing.B) {
	file := connectortest.WriteTools(b, b.TempDir(), baseTools())
	for _, mode := range []struct {
		name    string
		profile *confine.Profile
	}{
		{"confined", connectortest.Allow(filepath.Dir(file))},
		{"confined-net-any", &confine.Profile{Write: []string{filepath.Dir(file)}, Net: confine.NetAny}},
		{"unconfined", &confine.Profile{Unconfined: true}},
	} {
		b.Run(mode.name, func(b *testing.B) {
			cfg := connector.Config{Command: connectortest.Server(b), Args: []string{"--tools", file}, Confinement: mode.profile}
			before := cputime.Reaped()
			for b.Loop() {
				if inv, err := connector.Probe(context.Background(), cfg, connector.Options{}); err != nil || len(inv.Tools) != 2 {
					b.Fatalf("probe: %v", err)
				}
			}
			b.ReportMetric(cputime.PerOp(cputime.Reaped()-before, b.N), "child-cpu-ms/op")
		})
	}
}
