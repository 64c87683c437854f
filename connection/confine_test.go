package connection_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connection"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/confine"
	"github.com/oa-dev/oa/connector/proc"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/testkit/connectortest"
)

// TestAddChecksConfinement: a profile oa cannot enforce as written is
// refused at add time, at its field, and nothing is recorded; paths are
// recorded absolute, and the default profile is recorded as none (so a
// default connection reads as it did before profiles).
func TestAddChecksConfinement(t *testing.T) {
	home, h := newHost(t)
	defer h.Close()
	ctx := context.Background()
	change := connection.Change{By: "Test Operator", Now: time.Now()}
	data := t.TempDir()
	missing := filepath.Join(data, "missing")
	cases := []struct {
		name    string
		command string
		profile confine.Profile
		paths   []string
	}{
		{"missing path", "server", confine.Profile{Read: []string{data, missing}}, []string{"confinement.read[1]"}},
		{"relative missing", "server", confine.Profile{Write: []string{"no/such/folder"}}, []string{"confinement.write[0]"}},
		{"home", "server", confine.Profile{Read: []string{home}}, []string{"confinement.read[0]"}},
		{"inside home", "server", confine.Profile{Write: []string{filepath.Join(home, "keys")}}, []string{"confinement.write[0]"}},
		{"above home", "server", confine.Profile{Read: []string{"/"}}, []string{"confinement.read[0]"}},
		{"twice", "server", confine.Profile{Read: []string{data}, Write: []string{data}}, []string{"confinement.write[0]"}},
		{"bad net", "server", confine.Profile{Net: "https"}, []string{"confinement.net"}},
		{"unsorted net", "server", confine.Profile{Net: "443,80"}, []string{"confinement.net"}},
		{"limit", "server", confine.Profile{Limits: confine.Limits{OpenFiles: 3}}, []string{"confinement.limits.openFiles"}},
		{"unconfined and more", "server", confine.Profile{Unconfined: true, Net: confine.NetAny}, []string{"confinement.unconfined"}},
		{"sandbox", connector.SandboxCommand, confine.Profile{Read: []string{data}}, []string{"confinement"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := c.profile
			_, err := connection.Add(ctx, h, connection.AddOptions{Name: "crm", Connector: "crm.test", Config: connector.Config{Command: c.command, Confinement: &p}}, change)
			var paths []string
			for _, r := range blocking.Refusals(err) {
				if r.Code != blocking.ConfinementInvalid {
					t.Errorf("refusal %v, want %s", r, blocking.ConfinementInvalid)
				}
				paths = append(paths, r.Path)
			}
			if !slices.Equal(paths, c.paths) {
				t.Fatalf("refused at %v (%v), want %v", paths, err, c.paths)
			}
		})
	}
	if list, err := connection.List(ctx, h); err != nil || len(list) != 0 {
		t.Fatalf("refused adds recorded %v, %v", list, err)
	}
	t.Chdir(data)
	if err := os.Mkdir("sub", 0o700); err != nil {
		t.Fatal(err)
	}
	_, err := connection.Add(ctx, h, connection.AddOptions{Name: "crm", Connector: "crm.test", Config: connector.Config{Command: "server", Confinement: &confine.Profile{Read: []string{"sub"}, Net: "443"}}}, change)
	if err != nil {
		t.Fatal(err)
	}
	got, err := connection.Get(ctx, h, "crm")
	if err != nil || got.Config.Confinement == nil || !slices.Equal(got.Config.Confinement.Read, []string{filepath.Join(data, "sub")}) || got.Config.Confinement.Net != "443" {
		t.Fatalf("recorded %+v (%v), want the absolute path and the port", got, err)
	}
	rec, err := connection.Add(ctx, h, connection.AddOptions{Name: "crm", Connector: "crm.test", Config: connector.Config{Command: "server", Confinement: &confine.Profile{}}, Replace: true}, change)
	if err != nil || rec.Config.Confinement != nil || rec.Revision != 2 {
		t.Fatalf("the default profile recorded as %+v, revision %d (%v)", rec.Config.Confinement, rec.Revision, err)
	}
}

// TestPolicyForbidsUnconfined: with confinement.allow_unconfined false in
// the host policy, an unconfined connection is refused when it is added
// and when one added before the policy changed is verified.
func TestPolicyForbidsUnconfined(t *testing.T) {
	home, h := newHost(t)
	ctx := context.Background()
	change := connection.Change{By: "Test Operator", Now: time.Now()}
	unconfined := connector.Config{Command: connectortest.Probe(t), Confinement: &confine.Profile{Unconfined: true}}
	if _, err := connection.Add(ctx, h, connection.AddOptions{Name: "early", Connector: "crm.test", Config: unconfined}, change); err != nil {
		t.Fatalf("the starter policy allows unconfined: %v", err)
	}
	h.Close()
	policy := filepath.Join(home, host.PolicyFile)
	b, err := os.ReadFile(policy)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(policy, append(b, "\nconfinement: allow_unconfined: false\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	h, err = host.Open(ctx, home)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	_, err = connection.Add(ctx, h, connection.AddOptions{Name: "late", Connector: "crm.test", Config: unconfined}, change)
	if r := blocking.Refusals(err); len(r) != 1 || r[0].Code != blocking.ConfinementForbidden {
		t.Fatalf("add: %v, want %s", err, blocking.ConfinementForbidden)
	}
	_, err = connection.Verify(ctx, h, "early", connector.Options{}, change)
	if r := blocking.Refusals(err); len(r) != 1 || r[0].Code != blocking.ConfinementForbidden {
		t.Fatalf("verify: %v, want %s", err, blocking.ConfinementForbidden)
	}
	confined := connector.Config{Command: connectortest.Probe(t)}
	if _, err := connection.Add(ctx, h, connection.AddOptions{Name: "early", Connector: "crm.test", Config: confined, Replace: true}, change); err != nil {
		t.Fatal(err)
	}
	rec, err := connection.Verify(ctx, h, "early", connector.Options{}, change)
	if err != nil || rec.Verification.Enforced == nil || rec.Verification.Enforced.Mode != confine.ModeConfined {
		t.Fatalf("verify of the confined replacement: %v, %+v", err, rec)
	}
	if _, err := os.Stat(filepath.Join(connection.PrivateDir(home, "early"), proc.PrivateHome)); err != nil {
		t.Errorf("the private home was not made under $OA_HOME: %v", err)
	}
}

// TestDefaultProfileHidesHostAndHome: a server of a default connection,
// started as the coordinator starts it, cannot read the host key or the
// host database under $OA_HOME, nor a key in the operator's home, nor
// write next to them; its own private folders are its HOME and TMPDIR.
func TestDefaultProfileHidesHostAndHome(t *testing.T) {
	home, h := newHost(t)
	defer h.Close()
	probe := connectortest.Probe(t) // built (or found) in the real user cache first
	operatorHome := t.TempDir()
	t.Setenv("HOME", operatorHome)
	sshKey := filepath.Join(operatorHome, ".ssh", "id_ed25519")
	if err := os.MkdirAll(filepath.Dir(sshKey), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sshKey, []byte("PRIVATE KEY"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	change := connection.Change{By: "Test Operator", Now: time.Now()}
	if _, err := connection.Add(ctx, h, connection.AddOptions{Name: "probe", Connector: "probe.test", Config: connector.Config{Command: probe}}, change); err != nil {
		t.Fatal(err)
	}
	rec, err := connection.Verify(ctx, h, "probe", connector.Options{}, change)
	if err != nil {
		t.Fatal(err)
	}
	s, err := connector.Open(ctx, rec.Config, connection.StartOptions(home, "probe", connector.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	private := connection.PrivateDir(home, "probe")
	for _, target := range []struct{ read, write string }{
		{filepath.Join(home, "keys", "host.key"), filepath.Join(home, "keys", "planted")},
		{filepath.Join(home, host.StateFile), filepath.Join(home, "planted")},
		{filepath.Join(home, host.PolicyFile), filepath.Join(home, connection.PrivateFolder, "planted")},
		{sshKey, filepath.Join(operatorHome, ".ssh", "authorized_keys")},
	} {
		if _, err := os.Stat(target.read); err != nil {
			t.Fatalf("the test's target is missing: %v", err)
		}
		res, err := s.Call(ctx, "probe", map[string]any{"read": target.read, "write": target.write, "child": true})
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			Server, Child struct{ Read, Write, Home, Tmp string }
		}
		if err := json.Unmarshal(res.Structured, &r); err != nil {
			t.Fatal(err)
		}
		for who, o := range map[string]struct{ Read, Write, Home, Tmp string }{"server": r.Server, "child": r.Child} {
			// "absent": $OA_HOME is hidden where the server has a mount
			// namespace of its own.
			if (o.Read != "denied" && o.Read != "absent") || (o.Write != "denied" && o.Write != "absent") {
				t.Errorf("%s: read %s: %s, write %s: %s; want both denied or absent", who, target.read, o.Read, target.write, o.Write)
			}
			if o.Home != filepath.Join(private, proc.PrivateHome) || o.Tmp != filepath.Join(private, proc.PrivateTmp) {
				t.Errorf("%s: HOME %s TMPDIR %s, want the private folders under %s", who, o.Home, o.Tmp, private)
			}
		}
		if _, err := os.Stat(target.write); err == nil {
			t.Errorf("the server wrote %s", target.write)
		}
	}
}
