package compiler

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/schemas"
)

var fleetConfig = ConfigFile{Package: "fleet", Schema: schemas.Fleet, Def: schemas.FleetDef, Unreadable: blocking.FleetUnreadable, Invalid: blocking.FleetInvalid}

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
	writeTestFile(t, big, "package fleet\n\n// "+strings.Repeat("x", MaxConfigFileBytes)+"\n")
	for _, p := range []string{pipe, zero, big} {
		_, _, err := LoadConfig(p, fleetConfig)
		l := blocking.Refusals(err)
		if len(l) != 1 || l[0].Code != blocking.FleetUnreadable || l[0].Pos != p {
			t.Errorf("LoadConfig(%s) = %v; want %s at the file", filepath.Base(p), err, blocking.FleetUnreadable)
		}
	}
}
