package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/oa-dev/oa/blocking"
)

// TestFailureKindsStartTheirLine: what oa prints on stderr starts with
// its kind, as the README says: "oa: refused (…):" for a blocking code
// and "oa: usage error: " for a bad command line (both exit 2), "oa:
// error: " for a fault (exit 1); the --json object names the kind. On main
// a usage error and a fault both printed "oa: TEXT", and the README said
// every exit 2 starts "oa: refused".
func TestFailureKindsStartTheirLine(t *testing.T) {
	for _, c := range []struct {
		err          error
		prefix, kind string
		status       int
	}{
		{blocking.New(blocking.BundleUnreadable, "not a readable folder"), "oa: refused (1 problem):\n", "refused", 2},
		{blocking.List{blocking.New(blocking.BundleUnreadable, "a"), blocking.New(blocking.BundleUnreadable, "b")}, "oa: refused (2 problems):\n", "refused", 2},
		{Usage(errors.New("unknown flag: --nope")), "oa: usage error: unknown flag: --nope\n", "usage", 2},
		{errors.New("disk on fire"), "oa: error: disk on fire\n", "fault", 1},
	} {
		var text, j bytes.Buffer
		PrintFailure(&text, c.err, false, false)
		PrintFailure(&j, c.err, true, false)
		var got struct {
			Kind       string `json:"kind"`
			ExitStatus int    `json:"exitStatus"`
		}
		if !strings.HasPrefix(text.String(), c.prefix) || json.Unmarshal(j.Bytes(), &got) != nil || got.Kind != c.kind || got.ExitStatus != c.status || ExitStatus(c.err) != c.status {
			t.Errorf("%v: printed %q and %s; want %q, kind %s, status %d", c.err, text.String(), j.String(), c.prefix, c.kind, c.status)
		}
	}
}

// TestDebugDetailsEscapeControls: the cause's text is the operator's, but
// a remote server's words in it cannot drive the terminal.
func TestDebugDetailsEscapeControls(t *testing.T) {
	r := blocking.New(blocking.BundleUnreadable, "x")
	r.Cause = errors.New("bad\x1b[2Jthing\nnext")
	d := DebugDetails(r)
	if len(d) != 1 || d[0] != `bundle_unreadable: cause: bad\x1b[2Jthing`+"\nnext" {
		t.Fatalf("%q", d)
	}
}
