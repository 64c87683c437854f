package cli

import (
	"reflect"
	"testing"
)

func TestPositionalNames(t *testing.T) {
	for use, want := range map[string][]string{
		"inspect FILE":                {"FILE"},
		"copy SRC DST":                {"SRC", "DST"},
		"check [FILE]":                {"FILE"},
		"sign --key KEY REF@sha256:…": {"REF@sha256:…"},
		"add NAME --connector C [--env NAME…] [--secret-file F] --as NAME -- COMMAND ARGS…": {"NAME", "COMMAND", "ARGS…"},
		"revoke DIGEST --reason TEXT --as NAME [--publish --fleet FILE --fleet-key KEY]":    {"DIGEST"},
		"bind REF@sha256:… --deployment NAME --model M --as NAME [--yes]":                   {"REF@sha256:…"},
		"list": nil,
	} {
		if got := positionalNames(use); !reflect.DeepEqual(got, want) {
			t.Errorf("positionalNames(%q) = %q, want %q", use, got, want)
		}
	}
}
