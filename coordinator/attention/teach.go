package attention

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/internal/canonical"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/signing"
)

// A teach request is a person's audited request for a revised package
// version, made on a paused run: it names the run, the step it waits at
// and the release (binding and plan digests) and carries the person's
// text. It is signed with the host's receipt key (pinned by the host key,
// as receipts are), attached to the attention item and exported by
// `oa audit export`; it changes nothing about the pause. The text is
// operator text: at most MaxTeachText bytes of UTF-8, refused when it
// holds customer state, and never shown to the calling agent (the agent
// sees a count on the item).

// TeachRequestType is the type of a teach request record.
const TeachRequestType = "oa.teach-request/v1"

// MaxTeachText bounds a teach request's text, in bytes.
const MaxTeachText = 4096

// MaxTeachPerItem bounds the teach requests one attention item holds, so
// an item (read whole by every listing) stays small.
const MaxTeachPerItem = 16

// TeachRequest is one request for a revised package version.
type TeachRequest struct {
	Type          string    `json:"type"`
	Host          string    `json:"host"`
	Deployment    string    `json:"deployment"`
	AttentionID   string    `json:"attentionId"`
	RunID         string    `json:"runId"`
	Workflow      string    `json:"workflow"`
	Step          string    `json:"step"`
	Capability    string    `json:"capability"`
	BindingDigest string    `json:"bindingDigest"`
	PlanDigest    string    `json:"planDigest"`
	By            string    `json:"by"`
	Channel       string    `json:"channel"`
	Text          string    `json:"text"`
	At            time.Time `json:"at"`
	// CallDigest is the keyed digest of the call the paused step would
	// send (Stored.CallDigest) when the request was made: the request is
	// about that call. Absent on items made before calls were kept.
	CallDigest string `json:"callDigest,omitempty"`
}

// SignedTeachRequest is a teach request with the receipt key's signature
// over its canonical JSON.
type SignedTeachRequest struct {
	Request   TeachRequest `json:"request"`
	KeyID     string       `json:"keyId"`
	Signature string       `json:"signature"`
}

// CheckTeachText refuses a text that is empty, too long, not UTF-8 or
// holds customer state. The refusal never quotes the text.
func CheckTeachText(text string) error {
	switch {
	case strings.TrimSpace(text) == "":
		return blocking.New(blocking.TeachTextInvalid, "the text is empty")
	case len(text) > MaxTeachText:
		return blocking.New(blocking.TeachTextInvalid, "the text is %d bytes, over the %d allowed", len(text), MaxTeachText)
	case !utf8.ValidString(text):
		return blocking.New(blocking.TeachTextInvalid, "the text is not UTF-8")
	}
	if found := ir.ScanText(text, true); len(found) > 0 {
		return blocking.New(blocking.TeachTextInvalid, "the text holds customer state (%s at byte %d)", found[0].Rule, found[0].Offset)
	}
	return nil
}

// BoundDigests names what a paused run runs: the digests of its binding and
// plan, which a teach request records.
type BoundDigests struct {
	BindingDigest, PlanDigest string
}

// AttachTeach signs teach decision d of host as a request on the item,
// made at now, and attaches it; an item holds at most MaxTeachPerItem.
// Whether the item and its run still wait is checked before, in the same
// write (Waits, and the engine for the run).
func (s *Stored) AttachTeach(signer *signing.Signer, host string, rel BoundDigests, d Decision, now time.Time) error {
	if len(s.Teach) >= MaxTeachPerItem {
		return blocking.New(blocking.TeachRequestsFull, "the item holds %d teach requests", len(s.Teach))
	}
	signed, err := signTeach(signer, TeachRequest{Type: TeachRequestType, Host: host, Deployment: s.Deployment,
		AttentionID: s.ID, RunID: s.RunID, Workflow: s.Workflow, Step: s.Step, Capability: s.Capability,
		BindingDigest: rel.BindingDigest, PlanDigest: rel.PlanDigest, By: d.By, Channel: d.Channel, Text: d.Text, At: now.Truncate(time.Millisecond), CallDigest: s.CallDigest})
	if err != nil {
		return err
	}
	s.Teach = append(s.Teach, *signed)
	s.TeachRequests = len(s.Teach)
	return nil
}

func signTeach(signer *signing.Signer, req TeachRequest) (*SignedTeachRequest, error) {
	msg, err := canonical.Marshal(req)
	if err != nil {
		return nil, err
	}
	sig, err := signer.SignBytes(msg)
	if err != nil {
		return nil, err
	}
	return &SignedTeachRequest{Request: req, KeyID: signer.KeyID(), Signature: base64.StdEncoding.EncodeToString(sig)}, nil
}

// KeyOf looks up a receipt key the host pinned, by key id; it refuses an
// id the host never pinned.
type KeyOf func(keyID string) (*signing.Verifier, error)

// CheckTeachRequests verifies teach requests against the records (of the
// rebuilt host of an audit bundle): each is signed by a receipt key the
// host pinned (keys), names this host, and a run of the host's store of
// the same deployment; its text is within the bounds a request is taken
// with. The error names the first request that fails and why.
func (r Records) CheckTeachRequests(ctx context.Context, reqs []SignedTeachRequest, keys KeyOf) error {
	for i, s := range reqs {
		if err := r.checkTeach(ctx, keys, s); err != nil {
			return fmt.Errorf("teach request %d: %w", i+1, err)
		}
	}
	return nil
}

func (r Records) checkTeach(ctx context.Context, keys KeyOf, s SignedTeachRequest) error {
	bad := func(format string, args ...any) error {
		return blocking.New(blocking.TeachRequestInvalid, format, args...)
	}
	ver, err := keys(s.KeyID)
	if err != nil {
		return err
	}
	msg, err := canonical.Marshal(s.Request)
	if err != nil {
		return err
	}
	sig, err := base64.StdEncoding.DecodeString(s.Signature)
	if err != nil || ver.VerifyBytes(sig, msg) != nil {
		return bad("the signature does not verify with the pinned receipt key")
	}
	if s.Request.Type != TeachRequestType || s.Request.Host != r.Host {
		return bad("the request is not a teach request of this host")
	}
	if err := CheckTeachText(s.Request.Text); err != nil {
		return err
	}
	row, err := r.Rows.RunByID(ctx, s.Request.RunID)
	if err != nil {
		return err
	}
	if row == nil || row.Deployment != s.Request.Deployment {
		return bad("the request names no run of its deployment in the records")
	}
	return nil
}
