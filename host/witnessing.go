package host

import (
	"maps"
	"net"
	"net/url"
	"slices"

	"golang.org/x/mod/sumdb/note"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/ledger/translog"
)

// Witnessing is the policy's witnessing section: the c2sp.org/tlog-
// witness witnesses the host submits its receipts log's checkpoints to,
// by name, and how many must cosign. Its shape is #Witnessing in
// schemas/host/policy.cue.
type Witnessing struct {
	Witnesses map[string]Witness `json:"witnesses"`
	Quorum    int                `json:"quorum"`
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
// quorum; refusals are policy_witness_invalid, located.
func (p *Policy) loadWitnessing(posOf Locator) error {
	if p.Witnessing == nil {
		return nil
	}
	var refused blocking.List
	bad := func(msg, field string, path ...string) {
		refused = append(refused, blocking.New(blocking.PolicyWitnessInvalid, "%s", msg).At(posOf(path...), field))
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
	return nil
}

// usableWitnessURL: https with a host, or http on a loopback address;
// no user info, query or fragment.
func usableWitnessURL(s string) bool {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return false
	}
	switch u.Scheme {
	case "https":
		return true
	case "http":
		if u.Hostname() == "localhost" {
			return true
		}
		ip := net.ParseIP(u.Hostname())
		return ip != nil && ip.IsLoopback()
	}
	return false
}
