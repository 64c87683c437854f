package host

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/internal/boundedfile"
	"github.com/oa-dev/oa/ledger/translog"
)

// The witnessing section in c2sp.org/tlog-policy text (issue 41): rather
// than the CUE witnesses and quorum, `witnessing: policy_file: "NAME"`
// (relative to the policy's folder) or `witnessing: policy: """…"""`
// holds lines of
//
//	log <vkey> [<url>]
//	witness <name> <vkey> <url>
//	group <name> <all|any|N> <member>…
//	quorum <name|none>
//
// with # starting a comment. A group's members are witnesses or groups
// named on lines above it (so groups never form a cycle); quorum names a
// witness or a group, once. The text parses into the same Witnessing the
// CUE form gives (the coordinator submits to every witness; the quorum is
// a translog.Group, nested groups and all).

// MaxWitnessPolicyBytes bounds a tlog-policy text read.
const MaxWitnessPolicyBytes = 64 << 10

// maxWitnessPolicyWitnesses bounds the witnesses a policy text names (the
// coordinator submits to each).
const maxWitnessPolicyWitnesses = 64

// ParseWitnessPolicy parses c2sp.org/tlog-policy text into a Witnessing
// (its witnesses with their URLs, the log keys of its log lines, and the
// quorum as a group). Each refusal is policy_witness_invalid located at
// file:LINE (file names the text in messages), naming the rule and how
// to fix it; all of them are returned as a blocking.List.
func ParseWitnessPolicy(file string, text []byte) (*Witnessing, error) {
	return parseWitnessPolicy(text, func(line int) string { return fmt.Sprintf("%s:%d", file, line) }, "witnessing")
}

// parseWitnessPolicy is ParseWitnessPolicy locating each line with at.
func parseWitnessPolicy(text []byte, at func(line int) string, path string) (*Witnessing, error) {
	var refused blocking.List
	bad := func(line int, rule, format string, args ...any) {
		refused = append(refused, blocking.New(blocking.PolicyWitnessInvalid, format, args...).At(at(line), path+": "+rule))
	}
	if len(text) > MaxWitnessPolicyBytes {
		bad(1, "policy", "the tlog-policy text is larger than %d bytes: name fewer witnesses", MaxWitnessPolicyBytes)
		return nil, refused
	}
	w := &Witnessing{Witnesses: map[string]Witness{}}
	groups := map[string]*translog.Group{}
	keys := map[string]string{}
	quorumLine, quorumName := 0, ""
	for i, raw := range strings.Split(string(text), "\n") {
		line := i + 1
		if c := strings.IndexByte(raw, '#'); c >= 0 {
			raw = raw[:c]
		}
		f := strings.Fields(raw)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "log":
			if len(f) < 2 || len(f) > 3 {
				bad(line, "log", "a log line is `log <vkey> [<url>]`")
				continue
			}
			if _, err := note.NewVerifier(f[1]); err != nil {
				bad(line, "log", "the log key is not a signed-note Ed25519 verifier key (as `oa receipts log-key` prints it)")
				continue
			}
			if len(f) == 3 && !usableWitnessURL(f[2]) {
				bad(line, "log", "the log's URL is not an https:// URL (or http:// on loopback) with a host and no query")
				continue
			}
			w.Logs = append(w.Logs, f[1])
		case "witness":
			if len(f) != 4 {
				bad(line, "witness", "a witness line is `witness <name> <vkey> <url>`: the host submits its checkpoints to the URL")
				continue
			}
			name, vkey, u := f[1], f[2], f[3]
			if !validPolicyName(name) {
				bad(line, "witness", "the name %q is not letters, digits, '.', '_' or '-' (at most 63)", cutName(name))
				continue
			}
			if taken(w, groups, name) {
				bad(line, "witness", "the name %s is already a witness or group: give each its own", name)
				continue
			}
			if len(w.Witnesses) == maxWitnessPolicyWitnesses {
				bad(line, "witness", "more than %d witnesses: name fewer", maxWitnessPolicyWitnesses)
				continue
			}
			v, err := translog.ParseVerifierKey(vkey)
			switch {
			case err != nil || !isCosignatureKey(vkey):
				bad(line, "witness", "the key of %s is not a witness's public key (NAME+HASH+BASE64, as `oa witness key` prints it)", name)
				continue
			case keys[vkey] != "":
				bad(line, "witness", "the key of %s is the key of %s: each witness cosigns with its own", name, keys[vkey])
				continue
			case !usableWitnessURL(u):
				bad(line, "witness", "the URL of %s is not an https:// URL (or http:// on loopback) with a host and no query", name)
				continue
			}
			keys[vkey] = name
			w.Witnesses[name] = Witness{Key: vkey, URL: u, verifier: v}
		case "group":
			if len(f) < 4 {
				bad(line, "group", "a group line is `group <name> <all|any|N> <member>…` with at least one member")
				continue
			}
			name := f[1]
			if !validPolicyName(name) {
				bad(line, "group", "the name %q is not letters, digits, '.', '_' or '-' (at most 63)", cutName(name))
				continue
			}
			if taken(w, groups, name) {
				bad(line, "group", "the name %s is already a witness or group: give each its own", name)
				continue
			}
			g := &translog.Group{Name: name}
			members, ok := f[3:], true
			seen := map[string]bool{}
			for _, m := range members {
				switch {
				case seen[m]:
					bad(line, "group", "group %s names %s twice", name, cutName(m))
					ok = false
				case w.Witnesses[m].verifier != nil:
					g.Witnesses = append(g.Witnesses, w.Witnesses[m].verifier)
				case groups[m] != nil:
					g.Groups = append(g.Groups, groups[m])
				default:
					bad(line, "group", "group %s names %s, which is no witness or group on a line above it", name, cutName(m))
					ok = false
				}
				seen[m] = true
			}
			switch f[2] {
			case "all":
				g.Threshold = len(members)
			case "any":
				g.Threshold = 1
			default:
				n, err := strconv.Atoi(f[2])
				if err != nil || n < 1 || n > len(members) || strconv.Itoa(n) != f[2] {
					bad(line, "group", "the threshold of group %s is not all, any or a number from 1 to its %d members", name, len(members))
					ok = false
				}
				g.Threshold = n
			}
			if ok {
				groups[name] = g
			}
		case "quorum":
			if len(f) != 2 {
				bad(line, "quorum", "a quorum line is `quorum <name|none>`")
				continue
			}
			if quorumLine != 0 {
				bad(line, "quorum", "a second quorum line (the first is line %d): keep one", quorumLine)
				continue
			}
			quorumLine, quorumName = line, f[1]
		default:
			bad(line, cutName(f[0]), "not a tlog-policy rule: the rules are log, witness, group and quorum (# starts a comment)")
		}
	}
	if len(w.Witnesses) == 0 && len(refused) == 0 {
		bad(1, "witness", "the text names no witness: add `witness <name> <vkey> <url>` lines")
	}
	switch {
	case quorumLine == 0:
		bad(1, "quorum", "the text has no quorum line: add `quorum <group or witness>` (or `quorum none`)")
	case quorumName == "none":
	case groups[quorumName] != nil:
		w.group = groups[quorumName]
	case w.Witnesses[quorumName].verifier != nil:
		w.group = &translog.Group{Name: quorumName, Threshold: 1, Witnesses: []note.Verifier{w.Witnesses[quorumName].verifier}}
	default:
		bad(quorumLine, "quorum", "the quorum %s is no witness or group of the text: name one, or none", cutName(quorumName))
	}
	if len(refused) > 0 {
		return nil, refused
	}
	w.Quorum = min(w.group.Least(), len(w.Witnesses))
	return w, nil
}

// validPolicyName: a witness or group name of a policy text.
func validPolicyName(s string) bool {
	if s == "" || len(s) > 63 || s == "none" || s == "all" || s == "any" {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// taken: name is already a witness's or a group's.
func taken(w *Witnessing, groups map[string]*translog.Group, name string) bool {
	_, isWitness := w.Witnesses[name]
	return isWitness || groups[name] != nil
}

// isCosignatureKey: vkey is a c2sp.org/tlog-cosignature key, not a log's
// Ed25519 signed-note key.
func isCosignatureKey(vkey string) bool {
	_, err := note.NewVerifier(vkey)
	return err != nil
}

// cutName shortens a name quoted in a refusal.
func cutName(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// readWitnessPolicy reads the policy_file name relative to dir, bounded.
func readWitnessPolicy(dir, name string) ([]byte, error) {
	path := name
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, name)
	}
	b, err := boundedfile.Read(path, MaxWitnessPolicyBytes)
	if errors.Is(err, boundedfile.ErrTooLarge) {
		return nil, errTooLarge
	}
	return b, err
}

var (
	errTooLarge = errors.New("larger than a tlog-policy text can be")
	errNotGiven = errors.New("not given")
)

// readFailure says why a policy_file could not be read, in fixed words.
func readFailure(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "does not exist (the path is relative to the policy's folder)"
	case errors.Is(err, errNotGiven):
		return "was not given with the policy (an audit bundle carries it as witness-policy.txt)"
	case errors.Is(err, errTooLarge):
		return fmt.Sprintf("is larger than %d bytes", MaxWitnessPolicyBytes)
	}
	return "could not be read"
}
