package signing

import (
	"context"

	"oras.land/oras-go/v2"

	"github.com/oa-dev/oa/internal/canonical"
	"github.com/oa-dev/oa/oci"
)

// AttestConformance is the conformance gate: it runs the conformance
// checks on art (fetched from target) as authority and, only when every
// check passes, attests the report with s as an in-toto statement of
// ConformancePredicateType, written as opts says (cosign's .att tag, or a
// sigstore bundle referrer). A failing report refuses conformance_failed, naming
// each failed check, and writes nothing. Every attester (oa attest, the
// library's publish sequence) goes through here, so none can attest a
// report that failed.
func AttestConformance(ctx context.Context, target oras.Target, art *oci.Artifact, authority string, opts WriteOptions) (*ConformanceReport, error) {
	report := Conformance(art, authority)
	if err := report.Err(); err != nil {
		return report, err
	}
	predicate, err := canonical.Marshal(report)
	if err != nil {
		return nil, err
	}
	if _, err := Attest(ctx, target, art.Descriptor, ConformancePredicateType, predicate, opts); err != nil {
		return nil, err
	}
	return report, nil
}
