package fleet

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/signing"
)

// Signature states of a host status as the fleet reads it.
const (
	// SignedPinned: the status verifies with the host key the fleet file
	// pins.
	SignedPinned = "verified"
	// SignedSelf: the fleet file pins no key for the host; the status
	// verifies with the key it carries.
	SignedSelf = "self-signed"
	// Unsigned: the signature is missing or does not verify (with the
	// pinned key, when there is one), or the status is not one the host
	// could have written for this fleet.
	Unsigned = "unsigned"
	// NoStatus: the host has not reported.
	NoStatus = "missing"
)

// HostStatus is one host's status as the fleet operator reads it.
type HostStatus struct {
	Host string `json:"host"`
	// Deployment is what the fleet file assigns the host.
	Deployment string `json:"deployment,omitempty"`
	// Status is the host's report; nil when missing, and not to be trusted
	// unless Signed is verified or self-signed.
	Status *Status `json:"status,omitempty"`
	Signed string  `json:"signed"`
	// Stale says the host has not reported within the stale window.
	Stale bool `json:"stale"`
	// Age is how long ago the host last reported.
	Age string `json:"age,omitempty"`

	// future: the last-seen time is ahead of now by more than clock skew.
	future bool
}

// maxSkew is how far ahead of this clock a host's clock may be.
const maxSkew = 2 * time.Minute

// Flagged reports whether the operator should look at the host: its
// status is missing, unsigned, only self-signed (anyone who can push could
// have written it: pin the host's key in the fleet file) or stale, or it
// claims to come from the future.
func (s HostStatus) Flagged() bool {
	return s.Stale || s.Signed != SignedPinned || s.future
}

// ReadStatuses reads every host's status from the fleet's repository
// (concurrently, returned in host order), verifying each: with the host key the fleet file pins, or
// else the key the status carries. A status older than staleAfter (by its
// last-seen time) is stale.
func ReadStatuses(ctx context.Context, s *Spec, now time.Time, staleAfter time.Duration, opts Options) ([]HostStatus, error) {
	target, err := oci.Open(ctx, s.repo, opts.OpenOptions)
	if err != nil {
		return nil, err
	}
	assigned := s.Assignments()
	ids := slices.Sorted(maps.Keys(s.Hosts))
	out := make([]HostStatus, len(ids))
	// Hosts are read concurrently (bounded) over the one pooled client.
	err = parallel(ctx, len(ids), func(i int) error {
		id := ids[i]
		hs := HostStatus{Host: id, Deployment: assigned[id], Signed: NoStatus}
		doc, err := readDocument(ctx, target, StatusArtifactType, StatusTag(id))
		switch {
		case err == errMalformed:
			hs.Signed = Unsigned
		case err != nil:
			return err
		case doc != nil:
			hs.Status, hs.Signed = verifyStatus(doc, s, id)
		}
		if hs.Status != nil {
			age := now.Sub(hs.Status.LastSeen)
			hs.Age = age.Truncate(time.Second).String()
			hs.Stale = age > staleAfter
			hs.future = age < -maxSkew
		}
		out[i] = hs
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// verifyStatus decodes and verifies one host's status document.
func verifyStatus(doc *document, s *Spec, id string) (*Status, string) {
	var st Status
	if doc.decode(&st) != nil || st.Type != StatusType {
		return nil, Unsigned
	}
	signed := Unsigned
	if pinned := s.HostVerifier(id); pinned != nil {
		if doc.verifiedBy([]*signing.Verifier{pinned}) != nil {
			signed = SignedPinned
		}
	} else if v, err := signing.LoadVerifier(doc.PublicKey); err == nil && v.KeyID() == doc.KeyID && doc.verifiedBy([]*signing.Verifier{v}) != nil {
		signed = SignedSelf
	}
	if st.Host != id || st.Fleet != s.Name {
		signed = Unsigned
	}
	return &st, signed
}
