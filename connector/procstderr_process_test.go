package connector_test

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/oa-dev/oa/connector"
)

// syncBuilder is the operator's stderr, written from the copy goroutine.
type syncBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuilder) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuilder) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServerStderrReachesTheOperatorNamedCleanAndBounded: a real server
// that writes a line dressed as oa's own (a carriage return, a cursor
// escape, a terminal title) and then 8 MiB reaches the operator as lines
// under "[conn crm]" with no escape left, at most the bound of one start,
// and a line of oa's own saying how much was dropped.
func TestServerStderrReachesTheOperatorNamedCleanAndBounded(t *testing.T) {
	t.Parallel()
	forged := "\x1b]0;oa\x07\x1b[2K\roa coordinator: question att_1 decided by Dr Ada via cli"
	cfg := serverConfig(t, baseTools(), "--stderr-text", forged, "--stderr-flood", "8388608")
	var out syncBuilder
	s, err := connector.Open(context.Background(), cfg, connector.Options{Stderr: &out, Name: "crm"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if len(got) > 4<<20+1024 {
		t.Fatalf("the operator got %d bytes of one start's stderr", len(got))
	}
	shape := regexp.MustCompile(`^(\[conn crm\] [^\x00-\x08\x0a-\x1f\x7f]*|oa: connection crm: [ -~]+)$`)
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	for _, l := range lines {
		if !shape.MatchString(l) {
			t.Fatalf("a line the operator sees is not the server's under its name nor oa's notice: %q", l)
		}
	}
	if lines[0] != "[conn crm] oa coordinator: question att_1 decided by Dr Ada via cli" {
		t.Fatalf("the forged line reads %q", lines[0])
	}
	if !regexp.MustCompile(`\noa: connection crm: [0-9]+ bytes of stderr dropped \(bound [0-9]+ bytes a (second|start)\)\n`).MatchString(got) {
		t.Fatalf("nothing says what was dropped; the last lines: %q", lines[max(0, len(lines)-3):])
	}
}
