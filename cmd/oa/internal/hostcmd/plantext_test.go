package hostcmd

import (
	"bytes"
	"strings"
	"testing"

	"github.com/oa-dev/oa/resolve"
)

// TestPlanTextSaysWhenNoModelWasGiven: oa resolve without --model says no
// model was given and how one is named (main printed "model " and
// nothing after it); with one, it names it.
func TestPlanTextSaysWhenNoModelWasGiven(t *testing.T) {
	var b bytes.Buffer
	printPlanText(&b, &resolve.Plan{Deployment: "d", Host: "h"}, nil)
	if !strings.Contains(b.String(), ", no model given (oa bind names one with --model") || strings.Contains(b.String(), "model \n") {
		t.Fatalf("%s", b.String())
	}
	b.Reset()
	printPlanText(&b, &resolve.Plan{Deployment: "d", Host: "h", Model: "claude-x"}, nil)
	if !strings.Contains(b.String(), ", model claude-x\n") {
		t.Fatalf("%s", b.String())
	}
}
