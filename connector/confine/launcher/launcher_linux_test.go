package launcher

import (
	"slices"
	"testing"
)

// TestParsePorts: the spec's canonical port list is read as written;
// anything else is refused, so the launcher never builds a ruleset from a
// list it misread.
func TestParsePorts(t *testing.T) {
	if got, err := parsePorts("22,443,8080"); err != nil || !slices.Equal(got, []uint16{22, 443, 8080}) {
		t.Errorf("parsePorts = %v, %v", got, err)
	}
	for _, bad := range []string{"", "0", "65536", " 443", "443,", "any", "1e3"} {
		if got, err := parsePorts(bad); err == nil {
			t.Errorf("parsePorts(%q) = %v, want a refusal", bad, got)
		}
	}
}

// TestRestrictRefusesUnknownABI: a spec built for no Landlock, or for an
// ABI oa has no ruleset for, is refused before any rule is applied to
// this process.
func TestRestrictRefusesUnknownABI(t *testing.T) {
	for _, abi := range []int{0, -1, MaxABI + 1, 99} {
		if err := restrict(&Spec{ABI: abi}, nil); err == nil {
			t.Errorf("restrict at ABI %d: want a refusal", abi)
		}
	}
}
