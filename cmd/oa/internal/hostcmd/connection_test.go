package hostcmd

import (
	"reflect"
	"strings"
	"testing"

	"github.com/oa-dev/oa/connector"
)

// TestSplitSettings: --env NAME stays a variable passed from oa's
// environment; --env NAME=VALUE becomes a plain setting; a NAME given
// twice as a setting is refused.
func TestSplitSettings(t *testing.T) {
	cfg := connector.Config{Env: []string{"TOKEN", "DATA=/srv/data", "MODE=a=b"}}
	if err := splitSettings(&cfg); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cfg.Env, []string{"TOKEN"}) {
		t.Errorf("env %q, want [TOKEN]", cfg.Env)
	}
	if want := map[string]string{"DATA": "/srv/data", "MODE": "a=b"}; !reflect.DeepEqual(cfg.Settings, want) {
		t.Errorf("settings %v, want %v", cfg.Settings, want)
	}
	twice := connector.Config{Env: []string{"DATA=1", "DATA=2"}}
	if err := splitSettings(&twice); err == nil || !strings.Contains(err.Error(), "setting DATA is given twice") {
		t.Errorf("a setting given twice: %v", err)
	}
}

func TestAbsPath(t *testing.T) {
	if got := absPath(""); got != "" {
		t.Errorf("absPath(\"\") = %q", got)
	}
	if got := absPath("key"); !strings.HasPrefix(got, "/") || !strings.HasSuffix(got, "/key") {
		t.Errorf("absPath(key) = %q, want an absolute path", got)
	}
}
