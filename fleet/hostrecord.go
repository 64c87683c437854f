package fleet

import (
	"context"
	"time"

	"github.com/oa-dev/oa/host"
)

// HostRecord is what a host provisioned from a fleet keeps about it,
// read back from its own host-signed records (each verified with the
// host key): the envelope it last applied, the revocation list it last
// applied, and what the last run that left it bound read and pushed. It
// is what `oa console` shows on its Fleet page; it reads the host store
// only, never the registry.
type HostRecord struct {
	// Fleet is the fleet the host policy trusts; Host the host's id.
	Fleet, Host string
	// EnvelopeSeq and EnvelopeDigest are the envelope last applied.
	EnvelopeSeq    int64
	EnvelopeDigest string
	// RevocationsSeq and RevocationsDigest are the fleet revocation list
	// last applied; zero and empty when none was.
	RevocationsSeq    int64
	RevocationsDigest string
	// Bound is the last run that left the host bound; nil while none has
	// (the host waits for a person's approval, or every run was refused).
	Bound *BoundRecord
}

// BoundRecord is what the last provisioning run that left the host bound
// read and pushed.
type BoundRecord struct {
	// EnvelopeManifest is the manifest digest of the envelope it applied.
	EnvelopeManifest string
	// EnvelopeExpiresAt and RevocationsExpiresAt are when the envelope
	// and the revocation list it read expire (zero: no list).
	EnvelopeExpiresAt, RevocationsExpiresAt time.Time
	Deployment, Release, PlanDigest         string
	// StatusPushedAt is when it pushed the host's signed status (a run
	// that finds nothing changed pushes none until the status is
	// DefaultStatusRefresh old).
	StatusPushedAt time.Time
}

// ReadHostRecord reads what host h keeps about the fleet its policy
// trusts: nil, and no error, when the policy has no fleet section or the
// host never applied an envelope of it. A record that does not verify
// with the host key is fleet_record_unverified.
func ReadHostRecord(ctx context.Context, h *host.Host) (*HostRecord, error) {
	if h.Policy.Fleet == nil {
		return nil, nil
	}
	p := &provisioner{h: h, fleet: h.Policy.Fleet}
	applied, err := p.applied(ctx)
	if err != nil || applied == nil {
		return nil, err
	}
	out := &HostRecord{Fleet: p.fleet.Name, Host: h.Policy.Host, EnvelopeSeq: applied.EnvelopeSeq, EnvelopeDigest: applied.EnvelopeDigest}
	list, err := p.appliedRevocations(ctx)
	if err != nil {
		return nil, err
	}
	if list != nil {
		out.RevocationsSeq, out.RevocationsDigest = list.ListSeq, list.ListDigest
	}
	var rec provisionedRecord
	ok, err := p.readRecord(ctx, kindProvisioned, provisionedType, &rec)
	if err != nil {
		return nil, err
	}
	if ok {
		out.Bound = &BoundRecord{
			EnvelopeManifest: rec.EnvelopeManifest, EnvelopeExpiresAt: rec.EnvelopeExpiresAt, RevocationsExpiresAt: rec.RevocationsExpiresAt,
			Deployment: rec.Deployment, Release: rec.Release, PlanDigest: rec.PlanDigest, StatusPushedAt: rec.StatusPushedAt,
		}
	}
	return out, nil
}
