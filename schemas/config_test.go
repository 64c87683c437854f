package schemas

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/oa-dev/oa/blocking"
)

var fleetConfig = ConfigFile{Package: "fleet", Schema: Fleet, Def: FleetDef, Unreadable: blocking.FleetUnreadable, Invalid: blocking.FleetInvalid}

// TestLoadConfigRefusesWhatIsNotABoundedFile: a configuration file that is
// a named pipe, a link to /dev/zero or larger than MaxConfigFileBytes is
// refused as unreadable, located at the file, without waiting or reading
// it all.
func TestLoadConfigRefusesWhatIsNotABoundedFile(t *testing.T) {
	dir := t.TempDir()
	pipe := filepath.Join(dir, "pipe.cue")
	if err := syscall.Mkfifo(pipe, 0o644); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero.cue")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.cue")
	writeFile(t, big, "package fleet\n\n// "+strings.Repeat("x", MaxConfigFileBytes)+"\n")
	for _, p := range []string{pipe, zero, big} {
		_, _, err := LoadConfig(p, fleetConfig)
		l := blocking.Refusals(err)
		if len(l) != 1 || l[0].Code != blocking.FleetUnreadable || l[0].Pos != p {
			t.Errorf("LoadConfig(%s) = %v; want %s at the file", filepath.Base(p), err, blocking.FleetUnreadable)
		}
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
