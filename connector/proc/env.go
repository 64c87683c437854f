package proc

import (
	"bytes"
	"io"
	"maps"
	"regexp"
	"slices"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector/secretfile"
)

// envNameChars is the shape of an environment variable name oa passes on,
// but for its length (validEnvName). It is stricter than POSIX requires so
// a name can be shown in a refusal safely.
var envNameChars = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// maxEnvName is the longest variable name oa passes on.
const maxEnvName = 128

// validEnvName reports whether name is a variable name oa passes on: at
// most maxEnvName characters of envNameChars. The length is checked apart
// because a counted repetition compiles into one copy of the class per
// place, paid by every oa process at start.
func validEnvName(name string) bool {
	return len(name) <= maxEnvName && envNameChars.MatchString(name)
}

// maxSecretFile bounds how much of a secret file is read: a secret file is a
// handful of lines, and a huge one is a mistake, not a configuration.
const maxSecretFile = 64 << 10

// CheckSettings refuses a program's settings (connection_setting_invalid)
// whose name is not a variable name, or that names a variable also taken
// from oa's environment (Env). The secret file is checked against them at
// start.
func CheckSettings(p Program) error {
	for _, name := range sortedKeys(p.Settings) {
		switch {
		case !validEnvName(name):
			return blocking.New(blocking.ConnectionSettingInvalid, "a setting is not a variable name")
		case slices.Contains(p.Env, name):
			return blocking.New(blocking.ConnectionSettingInvalid, "%s is both a setting and a variable taken from oa's environment", name)
		case name == "PATH" || name == "HOME":
			return blocking.New(blocking.ConnectionSettingInvalid, "%s is set by oa", name)
		}
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	return slices.Sorted(maps.Keys(m))
}

// Environment returns the whole environment of program p (but for its
// tree's mark, TreeEnv, which Connect adds): PATH and HOME from oa's
// environment, then the named variables, then the settings with their
// recorded values, then the secret-file entries. Nothing else of oa's
// environment leaks to the child. lookup reads oa's environment
// (os.LookupEnv outside tests).
func Environment(p Program, lookup func(string) (string, bool)) ([]string, error) {
	var env []string
	seen := map[string]bool{}
	for _, name := range []string{"PATH", "HOME"} {
		if v, ok := lookup(name); ok {
			env = append(env, name+"="+v)
		}
	}
	for _, name := range p.Env {
		if !validEnvName(name) {
			return nil, blocking.New(blocking.ConnectorConfigInvalid, "an env entry is not a variable name")
		}
		if seen[name] {
			return nil, blocking.New(blocking.ConnectorConfigInvalid, "env names %s twice", name)
		}
		seen[name] = true
		v, ok := lookup(name)
		if !ok {
			return nil, blocking.New(blocking.ConnectionSettingMissing, "environment variable %s (--env %s) is not set in the environment oa runs in", name, name)
		}
		env = append(env, name+"="+v)
	}
	if err := CheckSettings(p); err != nil {
		return nil, err
	}
	for _, name := range sortedKeys(p.Settings) {
		seen[name] = true
		env = append(env, name+"="+p.Settings[name])
	}
	if p.SecretFile == "" {
		return env, nil
	}
	entries, err := readSecretFile(p.SecretFile)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if seen[e.name] {
			return nil, blocking.New(blocking.ConnectorConfigInvalid, "%s is both a named env variable and a secret file entry", e.name)
		}
		seen[e.name] = true
		env = append(env, e.name+"="+e.value)
	}
	return env, nil
}

// secretEntry is one NAME=VALUE line of a secret file.
type secretEntry struct{ name, value string }

// readSecretFile reads the entries of the secret file at path, opened
// once and held to the rules of package secretfile. Refusals name the
// rule, never the path or the contents.
func readSecretFile(path string) ([]secretEntry, error) {
	f, err := secretfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSecretFile+1))
	if err != nil {
		return nil, blocking.New(blocking.ConnectorSecretUnavailable, "the secret file cannot be read")
	}
	if len(data) > maxSecretFile {
		return nil, blocking.New(blocking.ConnectorSecretUnavailable, "the secret file is larger than %d bytes", maxSecretFile)
	}
	return parseSecrets(data)
}

// parseSecrets reads NAME=VALUE lines. Blank lines and lines starting with
// # are skipped; a CR before the LF is dropped; the value is everything
// after the first '=' taken literally (no quotes, no expansion), so what the
// operator wrote is exactly what the server gets. A refusal names the line
// number and the rule only.
func parseSecrets(data []byte) ([]secretEntry, error) {
	var out []secretEntry
	seen := map[string]bool{}
	for i, line := range bytes.Split(data, []byte("\n")) {
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(bytes.TrimSpace(line)) == 0 || line[0] == '#' {
			continue
		}
		e, err := parseSecretLine(line)
		if err != nil {
			return nil, blocking.New(blocking.ConnectorSecretUnavailable, "secret file line %d: %s", i+1, err)
		}
		if seen[e.name] {
			return nil, blocking.New(blocking.ConnectorSecretUnavailable, "secret file line %d: the name is given twice", i+1)
		}
		seen[e.name] = true
		out = append(out, e)
	}
	return out, nil
}

// ruleError is a rule name; its text is fixed and never holds input.
type ruleError string

func (r ruleError) Error() string { return string(r) }

// parseSecretLine splits one non-blank line.
func parseSecretLine(line []byte) (secretEntry, error) {
	eq := bytes.IndexByte(line, '=')
	if eq < 0 {
		return secretEntry{}, ruleError("not NAME=VALUE")
	}
	name, value := string(line[:eq]), line[eq+1:]
	if !validEnvName(name) {
		return secretEntry{}, ruleError("the name is not a variable name")
	}
	if bytes.IndexByte(value, 0) >= 0 {
		return secretEntry{}, ruleError("the value holds a NUL byte")
	}
	// One CR before the LF is a Windows line end and already gone; another
	// is a mistake that would otherwise reach the server invisibly.
	if bytes.IndexByte(value, '\r') >= 0 {
		return secretEntry{}, ruleError("the value holds a carriage return")
	}
	return secretEntry{name: name, value: string(value)}, nil
}
