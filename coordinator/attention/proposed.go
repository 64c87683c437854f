package attention

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/internal/canonical"
	"github.com/oa-dev/oa/ir"
)

// The proposed change is what a person decides on when a run pauses for
// approval: the exact downstream call the step would send, what the run
// read before it, and the workflow's purpose and what done means. It
// holds customer state (the arguments, what was read), so it lives only
// sealed at rest inside the item (Stored.Sealed, AES-256-GCM under a key
// derived from the host's coordinator secret, which a confined server
// cannot read, bound to the item and to the call's digest), is opened
// only for the host's operator (Records.Show), and never reaches the
// calling agent, telemetry or a log. The item keeps the call's keyed
// digest (Stored.CallDigest) in the clear: a decision on the item holds
// for that call only.

// ProposedCall is the exact downstream call a paused step would send.
type ProposedCall struct {
	// Connection is the host connection the call goes to; Tool the
	// downstream server's tool.
	Connection string `json:"connection"`
	Tool       string `json:"tool"`
	// Arguments are the arguments as they will be sent.
	Arguments json.RawMessage `json:"arguments"`
}

// ProposedChange is what a person sees of a paused step before deciding.
type ProposedChange struct {
	Workflow   string  `json:"workflow"`
	Purpose    string  `json:"purpose"`
	DoneMeans  string  `json:"done_means"`
	Step       string  `json:"step"`
	Capability string  `json:"capability"`
	Risk       ir.Risk `json:"risk"`
	// Call is the downstream call the step would send.
	Call ProposedCall `json:"call"`
	// Read is what the run read before the step in this attempt, by
	// step: the record's state the decision rests on. ReadLeftOut is set
	// when it was too large to keep (MaxProposed) and left out.
	Read        map[string]json.RawMessage `json:"read"`
	ReadLeftOut bool                       `json:"read_left_out,omitempty"`
}

// MaxProposed bounds a proposed change as kept: every listing reads an
// item whole. Over it, what the run read is left out; the call is always
// kept.
const MaxProposed = 256 << 10

// callDigestDomain and proposedDomain separate these uses of the
// coordinator secret from every other.
const (
	callDigestDomain = "oa.proposed-call/v1\n"
	proposedDomain   = "oa.proposed-change/v1\n"
)

// CallDigest is the keyed digest of call (HMAC-SHA256 under the host's
// coordinator secret over its canonical JSON): a decision binds to it,
// and it says nothing of the arguments to whoever lacks the secret.
func CallDigest(secret []byte, call ProposedCall) (string, error) {
	args := call.Arguments
	if len(args) == 0 {
		args = json.RawMessage("null")
	}
	b, err := canonical.Marshal(ProposedCall{Connection: call.Connection, Tool: call.Tool, Arguments: args})
	if err != nil {
		return "", err
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(callDigestDomain))
	m.Write(b)
	return "hmac-sha256:" + base64.RawURLEncoding.EncodeToString(m.Sum(nil)), nil
}

// proposedAEAD is AES-256-GCM under HMAC-SHA256(secret, domain).
func proposedAEAD(secret []byte) (cipher.AEAD, error) {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(proposedDomain))
	block, err := aes.NewCipher(m.Sum(nil))
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// proposedAD binds a sealed change to its item and its call's digest: a
// sealed change copied into another item, or kept beside another digest,
// does not open.
func proposedAD(itemID, callDigest string) []byte {
	return fmt.Appendf([]byte(proposedDomain), "%d:%s%d:%s", len(itemID), itemID, len(callDigest), callDigest)
}

// Propose seals p into the item with the host's coordinator secret and
// records its call's digest: the item asks about that very call. What
// the run read is left out when the whole is over MaxProposed.
func (s *Stored) Propose(secret []byte, p ProposedChange) error {
	digest, err := CallDigest(secret, p.Call)
	if err != nil {
		return err
	}
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	if len(b) > MaxProposed {
		p.Read, p.ReadLeftOut = map[string]json.RawMessage{}, true
		if b, err = json.Marshal(p); err != nil {
			return err
		}
	}
	aead, err := proposedAEAD(secret)
	if err != nil {
		return err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return err
	}
	s.CallDigest, s.Sealed = digest, aead.Seal(nonce, nonce, b, proposedAD(s.ID, digest))
	return nil
}

// Proposed opens the item's proposed change with the host's coordinator
// secret: nil for an item that has none (a question, or an item made
// before changes were kept); proposed_change_unreadable when the sealed
// bytes do not open under this host's secret for this item and digest,
// or do not hold the call that digest names.
func (s *Stored) Proposed(secret []byte) (*ProposedChange, error) {
	if len(s.Sealed) == 0 {
		return nil, nil
	}
	refuse := func(why string) error {
		return blocking.New(blocking.ProposedChangeUnreadable, "attention item %s: %s", s.ID, why)
	}
	aead, err := proposedAEAD(secret)
	if err != nil {
		return nil, err
	}
	if len(s.Sealed) < aead.NonceSize() {
		return nil, refuse("the sealed change is cut short")
	}
	n := aead.NonceSize()
	b, err := aead.Open(nil, s.Sealed[:n], s.Sealed[n:], proposedAD(s.ID, s.CallDigest))
	if err != nil {
		return nil, refuse("the sealed change does not open with this host's secret")
	}
	var p ProposedChange
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, refuse("the sealed change does not decode")
	}
	if d, err := CallDigest(secret, p.Call); err != nil || d != s.CallDigest {
		return nil, refuse("the sealed change is not the call the item names")
	}
	return &p, nil
}
