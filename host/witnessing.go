package host

import (
	"fmt"
	"maps"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"

	"golang.org/x/mod/sumdb/note"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/ledger/translog"
)

// Witnessing is the policy's witnessing section: the c2sp.org/tlog-
// witness witnesses the host submits its receipts log's checkpoints to,
// by name, and which of them must cosign. Its shape is #Witnessing in
// schemas/host/policy.cue: witnesses and a quorum count in CUE, or
// c2sp.org/tlog-policy text (PolicyFile, relative to the policy's
// folder, or Policy inline; see witnesspolicy.go), parsed into the same
// Witnesses and a quorum group.
type Witnessing struct {
	Witnesses map[string]Witness `json:"witnesses"`
	// Quorum is how many witnesses must cosign: the CUE count, or for a
	// policy text the fewest whose cosignatures satisfy its quorum group
	// (what a flat count, such as a fleet document's, can say of it).
	Quorum int `json:"quorum"`
	// PolicyFile names a tlog-policy text file; Policy is tlog-policy
	// text inline, or, once a PolicyFile is loaded, that file's text (so
	// the policy's digest covers the witnesses it names).
	PolicyFile string `json:"policy_file,omitempty"`
	Policy     string `json:"policy,omitempty"`
	// Logs are the log keys a policy text's log lines name.
	Logs []string `json:"logs,omitempty"`

	group *translog.Group
}

// Group is the quorum as a c2sp.org/tlog-policy rule: the policy text's
// quorum group (nested groups and all), or Quorum of all the witnesses;
// nil when none need cosign.
func (w *Witnessing) Group() *translog.Group { return w.group }

// Satisfied reports whether the witnesses named (policy names, as
// ledger.Cosigners gives them) meet the quorum.
func (w *Witnessing) Satisfied(cosigners []string) bool {
	if w.group == nil {
		return true
	}
	names := map[string]bool{}
	for _, n := range cosigners {
		if wt, ok := w.Witnesses[n]; ok && wt.verifier != nil {
			names[wt.verifier.Name()+"+"+strconv.FormatUint(uint64(wt.verifier.KeyHash()), 16)] = true
		}
	}
	return w.group.Satisfied(func(v note.Verifier) bool {
		return names[v.Name()+"+"+strconv.FormatUint(uint64(v.KeyHash()), 16)]
	})
}

// TranslogPolicy is the witnesses and quorum as translog.VerifyProof
// takes them, for log (the log's key).
func (w *Witnessing) TranslogPolicy(log note.Verifier) translog.Policy {
	return translog.Policy{Log: log, Witnesses: w.Verifiers(), Quorum: w.Quorum, Group: w.group}
}

// Witness is one witness of the policy: its c2sp.org/tlog-cosignature
// public key and the base URL of its add-checkpoint.
type Witness struct {
	Key string `json:"key"`
	URL string `json:"url"`

	verifier note.Verifier
}

// Verifier is the witness's key, parsed when the policy was loaded.
func (w Witness) Verifier() note.Verifier { return w.verifier }

// Names are the witnesses' names, sorted.
func (w *Witnessing) Names() []string { return slices.Sorted(maps.Keys(w.Witnesses)) }

// Verifiers are the witnesses' keys, in Names order.
func (w *Witnessing) Verifiers() []note.Verifier {
	var out []note.Verifier
	for _, n := range w.Names() {
		out = append(out, w.Witnesses[n].verifier)
	}
	return out
}

// loadWitnessing parses each witness's key and checks its URL and the
// quorum, or parses the tlog-policy text (policy_file relative to dir,
// or policy); refusals are policy_witness_invalid, located.
func (p *Policy) loadWitnessing(dir witnessSource, posOf Locator) error {
	if p.Witnessing == nil {
		return nil
	}
	var refused blocking.List
	bad := func(msg, field string, path ...string) {
		refused = append(refused, blocking.New(blocking.PolicyWitnessInvalid, "%s", msg).At(posOf(path...), field))
	}
	wit := p.Witnessing
	forms := 0
	for _, set := range []bool{wit.Witnesses != nil || wit.Quorum != 0, wit.PolicyFile != "", wit.Policy != ""} {
		if set {
			forms++
		}
	}
	if forms != 1 {
		bad("give witnesses and quorum, or policy_file (a c2sp.org/tlog-policy text file), or policy (that text inline): exactly one", "witnessing", "witnessing")
		return refused
	}
	if wit.PolicyFile != "" || wit.Policy != "" {
		return p.loadWitnessPolicy(dir, posOf)
	}
	if wit.Witnesses == nil || wit.Quorum == 0 {
		bad("witnesses and quorum go together: name the witnesses and how many must cosign", "witnessing", "witnessing")
		return refused
	}
	seen := map[string]string{}
	for _, name := range p.Witnessing.Names() {
		w := p.Witnessing.Witnesses[name]
		field := "witnessing.witnesses." + name
		v, err := translog.ParseVerifierKey(w.Key)
		if err != nil {
			bad("key is not a witness's public key (NAME+HASH+BASE64, as oa witness key prints it)", field+".key", "witnessing", "witnesses", name, "key")
		} else if other, dup := seen[w.Key]; dup {
			bad("the key of "+name+" is the key of "+other+": each witness cosigns with its own", field+".key", "witnessing", "witnesses", name, "key")
		} else {
			seen[w.Key] = name
			w.verifier = v
		}
		if !usableWitnessURL(w.URL) {
			bad("url is not an https:// URL (or http:// on loopback) with a host and no query", field+".url", "witnessing", "witnesses", name, "url")
		}
		p.Witnessing.Witnesses[name] = w
	}
	if q := p.Witnessing.Quorum; q > len(p.Witnessing.Witnesses) {
		bad("the quorum is more than the witnesses named", "witnessing.quorum", "witnessing", "quorum")
	}
	if len(refused) > 0 {
		return refused
	}
	if q := p.Witnessing.Quorum; q > 0 {
		p.Witnessing.group = &translog.Group{Name: "quorum", Threshold: q, Witnesses: p.Witnessing.Verifiers()}
	}
	return nil
}

// witnessSource is where a policy_file's text comes from: the file,
// relative to dir, or, for a host rebuilt from an audit bundle (given),
// only text (the bundle's copy), never a file of the auditor's.
type witnessSource struct {
	dir   string
	given bool
	text  []byte
}

// loadWitnessPolicy parses the witnessing section's tlog-policy text:
// the policy_file (read bounded, relative to the policy's folder; errors
// located at FILE:LINE) or the inline policy (located at the field, and
// the line within it).
func (p *Policy) loadWitnessPolicy(src witnessSource, posOf Locator) error {
	dir := src.dir
	wit := p.Witnessing
	text := []byte(wit.Policy)
	at := func(line int) string {
		return fmt.Sprintf("%s (line %d of the text)", posOf("witnessing", "policy"), line)
	}
	path := "witnessing.policy"
	if wit.PolicyFile != "" {
		var b []byte
		var err error
		switch {
		case !src.given:
			b, err = readWitnessPolicy(dir, wit.PolicyFile)
		case src.text == nil:
			err = errNotGiven
		case len(src.text) > MaxWitnessPolicyBytes:
			err = errTooLarge
		default:
			b = src.text
		}
		if err != nil {
			e := blocking.New(blocking.PolicyWitnessInvalid, "the tlog-policy file %s %s", cutName(wit.PolicyFile), readFailure(err)).At(posOf("witnessing", "policy_file"), "witnessing.policy_file")
			e.Cause = err
			return blocking.List{e}
		}
		text = b
		shown := wit.PolicyFile
		if !filepath.IsAbs(shown) {
			shown = filepath.Join(dir, shown)
		}
		at = func(line int) string { return fmt.Sprintf("%s:%d", shown, line) }
		path = "witnessing.policy_file"
	}
	parsed, err := parseWitnessPolicy(text, at, path)
	if err != nil {
		return err
	}
	parsed.PolicyFile, parsed.Policy = wit.PolicyFile, string(text)
	p.Witnessing = parsed
	return nil
}

// usableWitnessURL: a URL the host may send to (usableURL) with no query.
func usableWitnessURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.RawQuery == "" && usableURL(s)
}
