package ledger

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

// SignTeach signs a teach request with the receipt key.
func SignTeach(signer *signing.Signer, req TeachRequest) (*SignedTeachRequest, error) {
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
	rows, err := StoreOf(h).AttentionItems(ctx)
	if err != nil {
		return nil, err
	}
	out := []SignedTeachRequest{}
	for _, row := range rows {
		// The item itself is the coordinator's; the ledger reads only
		// its deployment and the signed requests attached to it.
		var item struct {
			Deployment string               `json:"deployment"`
			Teach      []SignedTeachRequest `json:"teach"`
		}
		if err := json.Unmarshal(row.State, &item); err != nil {
			return nil, err
		}
		if deployment == "" || item.Deployment == deployment {
			out = append(out, item.Teach...)
		}
	}
	return out, nil
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
	if err := CheckTeachText(s.Request.Text); err != nil {
		return err
	}
	row, err := StoreOf(h).RunByID(ctx, s.Request.RunID)
	if err != nil {
		return err
	}
	if row == nil || row.Deployment != s.Request.Deployment {
		return bad("the request names no run of its deployment in the records")
	}
	return nil
}
