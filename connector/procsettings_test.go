package connector_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/confine"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// TestSettingsReachTheServer (issue 39): a connection's settings
// (--env NAME=VALUE) reach its server with their recorded values, whatever
// oa's environment holds; a variable it takes from oa's environment
// (--env NAME) that is not set there is connection_setting_missing,
// naming the variable, not a secret or an offline app; a setting that
// also names an --env variable is connection_setting_invalid.
func TestSettingsReachTheServer(t *testing.T) {
	t.Setenv("MEMORY_FILE_PATH", "/from/oa/environment")
	cfg := serverConfig(t, baseTools())
	cfg.Settings = map[string]string{"MEMORY_FILE_PATH": "/srv/memory.json"}
	cfg.Confinement = &confine.Profile{Unconfined: true}
	got := childEnvOf(t, cfg)
	want := []string{"HOME=" + os.Getenv("HOME"), "MEMORY_FILE_PATH=/srv/memory.json", "PATH=" + os.Getenv("PATH")}
	if !slices.Equal(got, want) {
		t.Fatalf("child env:\n got %q\nwant %q", got, want)
	}

	cfg = serverConfig(t, baseTools())
	cfg.Env = []string{"OA_TEST_UNSET_SETTING"}
	_, err := connector.Open(context.Background(), cfg, connector.Options{Timeout: 30 * time.Second})
	if !hosttest.HasCode(t, err, blocking.ConnectionSettingMissing) || blocking.Has(err, blocking.ConnectorSecretUnavailable) {
		t.Fatalf("an unset --env variable: %v", err)
	}
	if r := blocking.Refusals(err); len(r) != 1 || r[0].Detail == "" || !strings.Contains(r[0].Detail, "OA_TEST_UNSET_SETTING") {
		t.Fatalf("the refusal does not name the variable: %v", err)
	}

	cfg = serverConfig(t, baseTools())
	cfg.Env = []string{"MEMORY_FILE_PATH"}
	cfg.Settings = map[string]string{"MEMORY_FILE_PATH": "/srv/memory.json"}
	if _, err := connector.Open(context.Background(), cfg, connector.Options{Timeout: 30 * time.Second}); !hosttest.HasCode(t, err, blocking.ConnectionSettingInvalid) {
		t.Fatalf("a setting also taken from the environment: %v", err)
	}
}
