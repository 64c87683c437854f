package connection

import (
	"regexp"
	"strings"
	"unicode"
)

// A connection's command line is stored in the host database and shown by
// `oa connection show`, so a secret on it leaks however short it is. The
// shape scan of ir.ScanText finds long tokens; the rules here find a
// secret by the name it is given instead: an assignment NAME=VALUE (as
// `env SECRET_TOKEN=hunter2 server` or `--token=hunter2` write it), a
// header-like NAME: VALUE, or a flag --NAME followed by its VALUE, where
// NAME looks like it names a secret.

// secretWords are the word parts of a name that say it names a secret.
var secretWords = map[string]bool{
	"token": true, "tokens": true, "secret": true, "secrets": true,
	"password": true, "passwords": true, "passwd": true, "pwd": true, "pass": true, "passphrase": true,
	"key": true, "keys": true, "apikey": true, "accesskey": true, "secretkey": true, "privatekey": true, "signingkey": true,
	"credential": true, "credentials": true, "cred": true, "creds": true,
	"auth": true, "authorization": true, "bearer": true, "cookie": true, "session": true,
}

// secretSuffixes mark a one-word compound (accesstoken, clientsecret,
// dbpassword) as naming a secret.
var secretSuffixes = []string{"token", "secret", "password", "passwd"}

// referenceTails are last word parts that make a name refer to where a
// secret is (--token-file, --password-env, API_KEY_PATH) or describe it
// (--key-id, --auth-type) rather than hold it: the right way to pass one.
var referenceTails = map[string]bool{
	"file": true, "files": true, "path": true, "dir": true, "env": true, "var": true, "name": true,
	"id": true, "type": true, "kind": true, "mode": true, "method": true, "scheme": true, "format": true,
	"url": true, "uri": true, "endpoint": true, "size": true, "len": true, "length": true, "count": true,
	"ttl": true, "timeout": true, "expiry": true,
}

// negations lead a flag that turns something off (--no-auth), which
// takes no value.
var negations = map[string]bool{"no": true, "disable": true, "skip": true}

var (
	assignment = regexp.MustCompile(`^-{0,2}([A-Za-z_][A-Za-z0-9_.-]*)=(.*)$`)
	header     = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9_-]*)\s*:\s*(\S.*)$`)
	longFlag   = regexp.MustCompile(`^--?([A-Za-z][A-Za-z0-9_.-]*)$`)
	envRef     = regexp.MustCompile(`^\$(\{[A-Za-z_][A-Za-z0-9_]*\}|[A-Za-z_][A-Za-z0-9_]*)$`)
)

// secretOnCommandLine is one place a secret was found: the index into the
// command line (0 is the command, i is args[i-1]) and the rule, never the
// value or the name.
type secretOnCommandLine struct {
	index int
	rule  string
}

// scanCommandLine returns the secrets that words (the command and then its
// arguments) pass by name. isPath says whether a value is an existing file,
// which a flag may name (--token /run/secrets/x is the right way).
func scanCommandLine(words []string, isPath func(string) bool) []secretOnCommandLine {
	var found []secretOnCommandLine
	for i := 0; i < len(words); i++ {
		w := words[i]
		if m := assignment.FindStringSubmatch(w); m != nil {
			if secretName(m[1]) && holdsValue(m[2], isPath) {
				found = append(found, secretOnCommandLine{i, "a secret-looking NAME=VALUE assignment"})
			}
			continue
		}
		if m := header.FindStringSubmatch(w); m != nil && !strings.Contains(w, "://") {
			if secretName(m[1]) && holdsValue(m[2], isPath) {
				found = append(found, secretOnCommandLine{i, "a secret-looking NAME: VALUE header"})
			}
			continue
		}
		if m := longFlag.FindStringSubmatch(w); m != nil && secretName(m[1]) && i+1 < len(words) {
			if next := words[i+1]; !strings.HasPrefix(next, "-") && holdsValue(next, isPath) {
				found = append(found, secretOnCommandLine{i + 1, "the value of a secret-looking flag"})
				i++
			}
		}
	}
	return found
}

// holdsValue reports whether v may be a secret value: not empty, not an
// existing file, and not a literal $NAME for the server to expand.
func holdsValue(v string, isPath func(string) bool) bool {
	v = strings.Trim(v, `"'`)
	return v != "" && !envRef.MatchString(v) && !isPath(v)
}

// secretName reports whether name (an environment variable, flag or header
// name) names a secret: one of its word parts, split at '_', '-', '.' and
// camel-case humps and compared case-insensitively, is a secret word, and
// its last part does not make it a reference to one (nor its first a
// negation).
func secretName(name string) bool {
	parts := wordParts(name)
	if len(parts) == 0 || referenceTails[parts[len(parts)-1]] || negations[parts[0]] {
		return false
	}
	for _, p := range parts {
		if secretWords[p] {
			return true
		}
		for _, s := range secretSuffixes {
			if strings.HasSuffix(p, s) {
				return true
			}
		}
	}
	return false
}

// wordParts splits name into lower-case word parts: at every character that
// is not a letter or digit, and where camel case starts a word (apiKey,
// APIKey).
func wordParts(name string) []string {
	var parts []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			parts = append(parts, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	runes := []rune(name)
	for i, r := range runes {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush()
			continue
		}
		if unicode.IsUpper(r) && len(cur) > 0 {
			prev := runes[i-1]
			nextLower := i+1 < len(runes) && unicode.IsLower(runes[i+1])
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && nextLower) {
				flush()
			}
		}
		cur = append(cur, r)
	}
	flush()
	return parts
}
