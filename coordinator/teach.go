package coordinator

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/host"
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
}

// SignedTeachRequest is a teach request with the receipt key's signature
// over its canonical JSON.
type SignedTeachRequest struct {
	Request   TeachRequest `json:"request"`
	KeyID     string       `json:"keyId"`
	Signature string       `json:"signature"`
}

// checkTeachText refuses a text that is empty, too long, not UTF-8 or
// holds customer state. The refusal never quotes the text.
func checkTeachText(text string) error {
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

// teach attaches a signed teach request to the item while its run still
// waits on it (open or escalated), in one write that leaves the run as it
// is.
func teach(ctx context.Context, h *host.Host, signer *signing.Signer, d Decision, now time.Time) (*AttentionItem, error) {
	if err := checkTeachText(d.Text); err != nil {
		return nil, err
	}
	if err := pinReceiptKey(ctx, h, signer, now); err != nil {
		return nil, err
	}
	key, err := runKey(h.Home)
	if err != nil {
		return nil, err
	}
	var item attentionState
	err = storeOf(h).DecideAttention(ctx, d.AttentionID, func(itemState, runState []byte) ([]byte, []byte, error) {
		if err := json.Unmarshal(itemState, &item); err != nil {
			return nil, nil, err
		}
		r, err := decodeRun(key, runState)
		if err != nil {
			return nil, nil, err
		}
		if item.State != AttentionOpen && item.State != AttentionEscalated {
			return nil, nil, blocking.New(blocking.AttentionDecided, "the item is %s", item.State)
		}
		if r.Status != statePaused || r.AttentionID != item.ID {
			return nil, nil, blocking.New(blocking.AttentionDecided, "the run no longer waits on this item")
		}
		if len(item.Teach) >= MaxTeachPerItem {
			return nil, nil, blocking.New(blocking.TeachRequestsFull, "the item holds %d teach requests", len(item.Teach))
		}
		signed, err := signTeach(signer, TeachRequest{Type: TeachRequestType, Host: h.Policy.Host, Deployment: item.Deployment,
			AttentionID: item.ID, RunID: item.RunID, Workflow: item.Workflow, Step: item.Step, Capability: item.Capability,
			BindingDigest: r.Binding, PlanDigest: r.PlanDigest, By: d.By, Channel: d.Channel, Text: d.Text, At: now.Truncate(time.Millisecond)})
		if err != nil {
			return nil, nil, err
		}
		item.Teach = append(item.Teach, *signed)
		item.TeachRequests = len(item.Teach)
		b, err := json.Marshal(item)
		return b, runState, err
	})
	if err != nil {
		return nil, err
	}
	return &item.AttentionItem, nil
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

// TeachRequestsOf returns the teach requests attached to the host's
// attention items, of one deployment ("" for all), oldest item first. It
// is for the operator and the audit export: the texts are operator text.
func TeachRequestsOf(ctx context.Context, h *host.Host, deployment string) ([]SignedTeachRequest, error) {
	items, err := listAttention(ctx, h, true)
	if err != nil {
		return nil, err
	}
	out := []SignedTeachRequest{}
	for _, a := range items {
		if deployment == "" || a.Deployment == deployment {
			out = append(out, a.Teach...)
		}
	}
	return out, nil
}

// TeachRequestsFor returns the teach requests attached to one item.
func TeachRequestsFor(ctx context.Context, h *host.Host, attentionID string) ([]SignedTeachRequest, error) {
	a, err := getAttention(ctx, h, attentionID)
	if err != nil {
		return nil, err
	}
	return append([]SignedTeachRequest{}, a.Teach...), nil
}

// CheckTeachRequests verifies teach requests against the host h (the
// rebuilt host of an audit bundle): each is signed by a receipt key the
// host pinned, names this host, and a run of the host's store of the
// same deployment; its text is within the bounds a request is taken
// with. The error names the first request that fails and why.
func CheckTeachRequests(ctx context.Context, h *host.Host, reqs []SignedTeachRequest) error {
	keys, err := receiptKeyPins(ctx, h)
	if err != nil {
		return err
	}
	for i, s := range reqs {
		if err := checkTeach(ctx, h, keys, s); err != nil {
			return fmt.Errorf("teach request %d: %w", i+1, err)
		}
	}
	return nil
}

func checkTeach(ctx context.Context, h *host.Host, keys pinnedKeys, s SignedTeachRequest) error {
	bad := func(format string, args ...any) error {
		return blocking.New(blocking.TeachRequestInvalid, format, args...)
	}
	ver, err := keys.key(s.KeyID)
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
	if s.Request.Type != TeachRequestType || s.Request.Host != h.Policy.Host {
		return bad("the request is not a teach request of this host")
	}
	if err := checkTeachText(s.Request.Text); err != nil {
		return err
	}
	row, err := storeOf(h).RunByID(ctx, s.Request.RunID)
	if err != nil {
		return err
	}
	if row == nil || row.Deployment != s.Request.Deployment {
		return bad("the request names no run of its deployment in the records")
	}
	return nil
}
