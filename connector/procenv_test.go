package connector_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/confine"
	"github.com/oa-dev/oa/connector/proc"
	"github.com/oa-dev/oa/testkit/connectortest"
)

const (
	secretValue = "sk-live-9f8e7d6c5b4a-SECRET-VALUE"
	envValue    = "tok-ENV-VALUE-314159"
)

// writeSecret writes a secret file with mode and returns its path, in a
// folder whose name is distinctive so a leak of the path is easy to spot.
func writeSecret(t *testing.T, content string, mode os.FileMode) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "very-private-folder")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "secrets.env")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

// childEnvOf starts the test server under cfg and returns the environment
// it received.
func childEnvOf(t *testing.T, cfg connector.Config) []string {
	t.Helper()
	envFile := filepath.Join(t.TempDir(), "env.json")
	cfg.Args = append(cfg.Args, "--env-file", envFile)
	s, err := connector.Open(context.Background(), cfg, connector.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	var env []string
	if err := json.Unmarshal(b, &env); err != nil {
		t.Fatal(err)
	}
	// Every server carries its tree's mark, and only that of oa's own.
	marks := 0
	env = slices.DeleteFunc(env, func(kv string) bool {
		mark := strings.HasPrefix(kv, proc.TreeEnv+"=")
		if mark {
			marks++
		}
		return mark
	})
	if marks != 1 {
		t.Fatalf("the server got %d tree marks, want 1", marks)
	}
	slices.Sort(env)
	return env
}

func TestChildEnvIsMinimal(t *testing.T) {
	t.Setenv("OA_TEST_TOKEN", envValue)
	t.Setenv("OA_TEST_NOT_PASSED", "leak")
	t.Setenv("HOME", "/home/tester")
	cfg := serverConfig(t, baseTools())
	cfg.Env = []string{"OA_TEST_TOKEN"}
	cfg.SecretFile = writeSecret(t, "# a comment\n\nAPI_KEY="+secretValue+"\r\nEMPTY=\nWITH_EQ=a=b\n", 0o600)
	cfg.Confinement = &confine.Profile{Unconfined: true}
	got := childEnvOf(t, cfg)
	want := []string{"API_KEY=" + secretValue, "EMPTY=", "HOME=/home/tester", "OA_TEST_TOKEN=" + envValue, "PATH=" + os.Getenv("PATH"), "WITH_EQ=a=b"}
	if !slices.Equal(got, want) {
		t.Fatalf("unconfined child env:\n got %q\nwant %q", got, want)
	}
	// Confined, HOME and TMPDIR are the server's private folders, and the
	// launcher adds nothing else.
	cfg.Confinement = connectortest.Allow(filepath.Dir(t.TempDir()))
	got = childEnvOf(t, cfg)
	home, tmp := "", ""
	for i, kv := range got {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home, got[i] = v, "HOME=private"
		}
		if v, ok := strings.CutPrefix(kv, "TMPDIR="); ok {
			tmp, got[i] = v, "TMPDIR=private"
		}
	}
	slices.Sort(got)
	want = []string{"API_KEY=" + secretValue, "EMPTY=", "HOME=private", "OA_TEST_TOKEN=" + envValue, "PATH=" + os.Getenv("PATH"), "TMPDIR=private", "WITH_EQ=a=b"}
	if !slices.Equal(got, want) || filepath.Base(home) != proc.PrivateHome || filepath.Base(tmp) != proc.PrivateTmp || filepath.Dir(home) != filepath.Dir(tmp) {
		t.Fatalf("confined child env:\n got %q (HOME %s, TMPDIR %s)\nwant %q", got, home, tmp, want)
	}
}

func TestSecretRefusalsNeverEcho(t *testing.T) {
	base := serverConfig(t, baseTools())
	t.Setenv("OA_TEST_TOKEN", envValue)
	cases := []struct {
		name   string
		env    []string
		secret func(t *testing.T) string
		code   blocking.Code
		names  string // what the refusal must name
	}{
		{"missing env", []string{"OA_TEST_MISSING_VAR"}, nil, blocking.ConnectionSettingMissing, "OA_TEST_MISSING_VAR"},
		{"bad env name", []string{"NOT-A-NAME"}, nil, blocking.ConnectorConfigInvalid, "not a variable name"},
		{"env twice", []string{"OA_TEST_TOKEN", "OA_TEST_TOKEN"}, nil, blocking.ConnectorConfigInvalid, "OA_TEST_TOKEN"},
		{"mode 0644", nil, func(t *testing.T) string { return writeSecret(t, "K="+secretValue+"\n", 0o644) }, blocking.ConnectorSecretUnavailable, "0600"},
		{"mode 0400", nil, func(t *testing.T) string { return writeSecret(t, "K="+secretValue+"\n", 0o400) }, blocking.ConnectorSecretUnavailable, "0600"},
		{"no equals", nil, func(t *testing.T) string { return writeSecret(t, "OK=1\n"+secretValue+"\n", 0o600) }, blocking.ConnectorSecretUnavailable, "line 2"},
		{"bad name", nil, func(t *testing.T) string { return writeSecret(t, secretValue+"-x=1\n", 0o600) }, blocking.ConnectorSecretUnavailable, "line 1"},
		{"duplicate", nil, func(t *testing.T) string { return writeSecret(t, "K=1\nK="+secretValue+"\n", 0o600) }, blocking.ConnectorSecretUnavailable, "line 2"},
		{"clash with env", []string{"OA_TEST_TOKEN"}, func(t *testing.T) string { return writeSecret(t, "OA_TEST_TOKEN="+secretValue+"\n", 0o600) }, blocking.ConnectorConfigInvalid, "OA_TEST_TOKEN"},
		{"missing file", nil, func(t *testing.T) string { return filepath.Join(t.TempDir(), "very-private-folder", "nope") }, blocking.ConnectorSecretUnavailable, "cannot be opened"},
		{"a folder", nil, func(t *testing.T) string { p := writeSecret(t, "", 0o600); return filepath.Dir(p) }, blocking.ConnectorSecretUnavailable, "regular file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := base
			cfg.Env = c.env
			if c.secret != nil {
				cfg.SecretFile = c.secret(t)
			}
			_, err := connector.Open(context.Background(), cfg, connector.Options{})
			refusal(t, err, c.code)
			msg := err.Error()
			if !strings.Contains(msg, c.names) {
				t.Errorf("refusal does not name %q: %s", c.names, msg)
			}
			for _, leak := range []string{secretValue, envValue, "very-private-folder", t.TempDir()} {
				if strings.Contains(msg, leak) {
					t.Errorf("refusal echoes %q: %s", leak, msg)
				}
			}
		})
	}
}
