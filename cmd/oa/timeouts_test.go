package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/oa-dev/oa/testkit/fleettest"
)

// silent is a loopback listener that accepts connections and never
// answers; accepted is closed at the first connection.
type silent struct {
	addr     string
	accepted chan struct{}
}

// silentHost starts a silent listener that lives until t ends.
func silentHost(t *testing.T) *silent {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &silent{addr: ln.Addr().String(), accepted: make(chan struct{})}
	var once sync.Once
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
			once.Do(func() { close(s.accepted) })
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	return s
}

// wantTimeout fails t unless oa exited 2 with registry_timeout naming the
// registry host.
func wantTimeout(t *testing.T, what string, errOut string, code int, host string) {
	t.Helper()
	wantExit(t, what, code, 2, "", errOut)
	wantHas(t, what, errOut, "registry_timeout", host)
	for _, raw := range []string{"context deadline", "i/o timeout", "dial tcp", "http://", "handshake timeout"} {
		if strings.Contains(errOut, raw) {
			t.Fatalf("%s: raw transport text %q:\n%s", what, raw, errOut)
		}
	}
}

// TestStalledRegistryIsRefusedByEveryCommand: against a registry that
// accepts and never answers, verify, pull, copy, provision and agent sync
// --once return refused (exit 2, registry_timeout) within their request
// timeout, given by flag or by the host policy; with no scheme flag the
// loopback TLS probe is what gives up, the same way.
func TestStalledRegistryIsRefusedByEveryCommand(t *testing.T) {
	s := silentHost(t)
	p := newPublisher(t)
	ref := s.addr + "/oa/clinic@sha256:" + strings.Repeat("a", 64)
	short := []string{"--request-timeout", "300ms"}
	home := os.Getenv("OA_HOME")
	for _, args := range [][]string{
		append([]string{"verify", ref, "--publisher-key", p.path("publisher.pub"), "--authority-key", p.path("authority.pub"), "--plain-http"}, short...),
		append([]string{"pull", ref, "-o", filepath.Join(t.TempDir(), "out")}, short...), // the TLS probe
		append([]string{"pull", ref, "--plain-http=false"}, short...),
		{"copy", ref, filepath.Join(t.TempDir(), "dst") + ":v1", "--to-oci-layout", "--from-plain-http", "--from-request-timeout", "300ms"},
		{"pull", ref, "--plain-http", "--request-timeout", "1h", "--timeout", "300ms"}, // the operation timeout
	} {
		_, errOut, code := oaProc(t, home, args...)
		wantTimeout(t, strings.Join(args[:1], " "), errOut, code, s.addr)
	}

	f := fleettest.New(t)
	h := f.NewHost("h01", fleettest.HostOptions{PreApprove: true})
	env := s.addr + "/oa/fleet:host-h01"
	_, errOut, code := oaProc(t, h.Home, "agent", "sync", "--once", "--envelope", env, "--plain-http", "--request-timeout", "300ms")
	wantTimeout(t, "agent sync --once", errOut, code, s.addr)
	// The host policy's limit applies without a flag.
	policy := filepath.Join(h.Home, "policy.cue")
	src, err := os.ReadFile(policy)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(policy, append(src, []byte("\nlimits: registry_request_seconds: 1\n")...), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = oaProc(t, h.Home, "provision", "--envelope", env, "--plain-http")
	wantTimeout(t, "provision", errOut, code, s.addr)
	if !strings.Contains(errOut, "1s") {
		t.Fatalf("provision did not use the policy's request timeout:\n%s", errOut)
	}
}

// TestTimeoutFlagsRefuseZero: a zero or negative timeout is a mistake on
// the command line (exit 2), never "no bound".
func TestTimeoutFlagsRefuseZero(t *testing.T) {
	for _, v := range []string{"0", "-1s", "soon"} {
		_, errOut, code := oaProc(t, t.TempDir(), "pull", "localhost:5000/x@sha256:"+strings.Repeat("a", 64), "--request-timeout", v)
		wantExit(t, "--request-timeout "+v, code, 2, "", errOut)
		wantHas(t, "--request-timeout "+v, errOut, "above zero")
	}
}
