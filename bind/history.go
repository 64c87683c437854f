package bind

import (
	"context"

	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/internal/canonical"
	"github.com/oa-dev/oa/internal/store"
	"github.com/oa-dev/oa/ir"
)

// Digest is a binding's digest as receipts and runs name it: of its
// canonical encoding.
func Digest(b *Binding) (string, error) {
	raw, err := canonical.Marshal(b)
	if err != nil {
		return "", err
	}
	return ir.DigestBytes(raw), nil
}

// History returns every binding version of deployment that verifies (as
// Current verifies the latest), by digest: what a receipt sealed under an
// earlier binding is checked against. A version that does not verify is
// left out, so a receipt naming it does not find it.
func History(ctx context.Context, h *host.Host, deployment string) (map[string]*Binding, error) {
	vs, err := h.Versions().History(ctx, store.KindBinding, deployment)
	if err != nil {
		return nil, err
	}
	out := map[string]*Binding{}
	for i := range vs {
		b, err := readVersion(h, &vs[i], deployment)
		if err != nil {
			continue
		}
		d, err := Digest(b)
		if err != nil {
			return nil, err
		}
		out[d] = b
	}
	return out, nil
}
