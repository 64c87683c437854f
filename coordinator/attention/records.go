package attention

import (
	"context"
	"encoding/json"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/ledger"
)

// Rows is what the records read of the host's store (ledger.Store, which
// owns the attention and runs tables).
type Rows interface {
	// AttentionItems returns every attention item, oldest first.
	AttentionItems(ctx context.Context) ([]ledger.AttentionRow, error)
	// OpenAttentionItems returns the items whose document says they are
	// open, oldest first, without reading the others.
	OpenAttentionItems(ctx context.Context) ([]ledger.AttentionRow, error)
	// AttentionByID returns an attention item, or nil.
	AttentionByID(ctx context.Context, id string) (*ledger.AttentionRow, error)
	// RunByID returns a run, or nil.
	RunByID(ctx context.Context, runID string) (*ledger.RunRow, error)
}

// Records are the attention records of one host, read without a running
// coordinator (the coordinator's AttentionRecords builds them).
type Records struct {
	// Rows reads the host's store.
	Rows Rows
	// Home is the host's $OA_HOME, where the question sockets are.
	Home string
	// Host is the host's name in its policy, which teach requests carry.
	Host string
	// Secret reads the host's coordinator secret, with which a request on
	// a question socket proves it comes from the host's operator; nil
	// (or an error) and no request is sent.
	Secret func() ([]byte, error)
}

// List lists the host's attention items: the open ones, or all.
func (r Records) List(ctx context.Context, all bool) ([]Item, error) {
	items, err := r.Load(ctx, all)
	if err != nil {
		return nil, err
	}
	out := make([]Item, len(items))
	for i, a := range items {
		out[i] = a.Item
	}
	return out, nil
}

// Get returns one attention item of the host.
func (r Records) Get(ctx context.Context, id string) (*Item, error) {
	a, err := r.LoadOne(ctx, id)
	if err != nil {
		return nil, err
	}
	return &a.Item, nil
}

// Load returns the stored attention items, oldest first: the open ones,
// or all.
func (r Records) Load(ctx context.Context, all bool) ([]Stored, error) {
	read := r.Rows.OpenAttentionItems
	if all {
		read = r.Rows.AttentionItems
	}
	rows, err := read(ctx)
	if err != nil {
		return nil, err
	}
	var out []Stored
	for _, row := range rows {
		var a Stored
		if err := json.Unmarshal(row.State, &a); err != nil {
			return nil, err
		}
		if all || a.State == Open {
			out = append(out, a)
		}
	}
	return out, nil
}

// LoadOne returns one stored attention item, refused as unknown when the
// host has none of that id.
func (r Records) LoadOne(ctx context.Context, id string) (*Stored, error) {
	row, err := r.Rows.AttentionByID(ctx, id)
	if err != nil {
		return nil, err
	}
	if row == nil {
		return nil, blocking.New(blocking.AttentionUnknown, "no such item")
	}
	var a Stored
	if err := json.Unmarshal(row.State, &a); err != nil {
		return nil, err
	}
	return &a, nil
}

// TeachRequestsOf returns the teach requests attached to the host's
// attention items, of one deployment ("" for all), oldest item first. It
// is for the operator and the audit export: the texts are operator text.
func (r Records) TeachRequestsOf(ctx context.Context, deployment string) ([]SignedTeachRequest, error) {
	items, err := r.Load(ctx, true)
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
func (r Records) TeachRequestsFor(ctx context.Context, attentionID string) ([]SignedTeachRequest, error) {
	a, err := r.LoadOne(ctx, attentionID)
	if err != nil {
		return nil, err
	}
	return append([]SignedTeachRequest{}, a.Teach...), nil
}

// Shown is an attention item as its host's operator sees it: with the
// change the paused step proposes (opened with the host's coordinator
// secret) and its call's digest. It is for the operator alone, never the
// calling agent.
type Shown struct {
	Item
	// CallDigest is the keyed digest of the proposed call, which a
	// decision on the item binds to.
	CallDigest string `json:"call_digest,omitempty"`
	// Proposed is the change the step would make; nil on a question and
	// on an item made before changes were kept.
	Proposed *ProposedChange `json:"proposed_change,omitempty"`
}

// Show returns one attention item of the host with its proposed change,
// opened with the host's coordinator secret (Secret).
func (r Records) Show(ctx context.Context, id string) (*Shown, error) {
	a, err := r.LoadOne(ctx, id)
	if err != nil {
		return nil, err
	}
	out := &Shown{Item: a.Item, CallDigest: a.CallDigest}
	if len(a.Sealed) == 0 {
		return out, nil
	}
	if r.Secret == nil {
		return nil, blocking.New(blocking.ProposedChangeUnreadable, "attention item %s: no host secret to open it with", id)
	}
	secret, err := r.Secret()
	if err != nil {
		return nil, err
	}
	if out.Proposed, err = a.Proposed(secret); err != nil {
		return nil, err
	}
	return out, nil
}
