package admit

import (
	"context"
	"strings"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/host"
)

// Link is one link of a release's integrity chain on this host.
type Link struct {
	Name    string          `json:"link"`
	Detail  string          `json:"detail,omitempty"`
	Refusal *blocking.Error `json:"refusal,omitempty"`
}

// Integrity is the chain artifact → IR → publisher signature →
// conformance attestations → admission, each link with its state.
type Integrity struct {
	Links  []Link  `json:"links"`
	Status *Status `json:"status"`
}

// IntegrityOf checks the release's chain under the host policy at now and
// reports every link. It writes nothing.
func IntegrityOf(ctx context.Context, h *host.Host, target oras.ReadOnlyTarget, desc ocispec.Descriptor, now time.Time) (*Integrity, error) {
	d, err := Evaluate(ctx, target, desc, h.Policy, "", now)
	if err != nil {
		return nil, err
	}
	in := &Integrity{}
	byName := map[string]*blocking.Error{}
	for _, c := range d.Checks {
		byName[c.Name] = c.Refusal
	}
	irDigest := ""
	if d.Artifact != nil {
		irDigest = d.Artifact.IRDigest
	}
	in.Links = append(in.Links,
		Link{Name: "artifact", Detail: desc.Digest.String(), Refusal: byName[CheckArtifact]},
		Link{Name: "worker_ir", Detail: irDigest, Refusal: byName[CheckArtifact]},
		Link{Name: "publisher_signature", Detail: d.Publisher, Refusal: byName[CheckSignature]},
		Link{Name: "conformance_attestations", Detail: strings.Join(d.Authorities, ", "), Refusal: byName[CheckAttestations]},
	)
	st, err := StatusOf(ctx, h, desc.Digest.String(), now)
	if err != nil {
		return nil, err
	}
	in.Status = st
	in.Links = append(in.Links, Link{Name: "admission", Detail: string(st.State), Refusal: st.Why})
	return in, nil
}

// Err returns the refusals of the links that do not hold.
func (in *Integrity) Err() error {
	var l blocking.List
	for _, link := range in.Links {
		if link.Refusal != nil {
			l = append(l, link.Refusal)
		}
	}
	return l.Err()
}
