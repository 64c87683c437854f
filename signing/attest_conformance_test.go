package signing

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/examples"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/schemas"
	"github.com/oa-dev/oa/testkit/exampletest"
)

// TestAttestConformanceRefusesAFailingReport: the gate refuses a report
// with a failed check and writes no attestation, in either format.
func TestAttestConformanceRefusesAFailingReport(t *testing.T) {
	for _, bundle := range []bool{false, true} {
		art, store := pushEdited(t, func(w *ir.Worker) { w.Jobs[0].Purpose += " Mail triage.lead@clinic.example." })
		auth := csKey(t, 1)
		_, err := AttestConformance(context.Background(), store, art, "authority.example", WriteOptions{Signer: auth.signer, Repository: "clinic-triage", Bundle: bundle})
		csWantCode(t, err, blocking.ConformanceFailed)
		if _, err := store.Resolve(context.Background(), oci.AttestationTag(art.Descriptor.Digest)); err == nil {
			t.Fatal("an .att tag was written for a failing report")
		}
		if _, err := VerifyAttestation(context.Background(), store, art.Descriptor, auth.verifier, ConformancePredicateType); err == nil {
			t.Fatalf("bundle=%v: an attestation verifies for a failing report", bundle)
		}
	}
}

// TestAttestConformanceAttestsAPassingReport: a passing report is the
// attested predicate, verifiable with the authority's key.
func TestAttestConformanceAttestsAPassingReport(t *testing.T) {
	for _, bundle := range []bool{false, true} {
		res := exampletest.Compile(t, examples.Default)
		store := csLayout(t).target
		ctx := context.Background()
		desc, err := oci.Push(ctx, store, res.Worker, res.IR, "v1", oci.PackOptions{})
		if err != nil {
			t.Fatal(err)
		}
		art, err := oci.Fetch(ctx, store, desc, schemas.CheckFetchedIR)
		if err != nil {
			t.Fatal(err)
		}
		auth := csKey(t, 1)
		report, err := AttestConformance(ctx, store, art, "authority.example", WriteOptions{Signer: auth.signer, Repository: "clinic-triage", Bundle: bundle})
		if err != nil || !report.Passed {
			t.Fatalf("report %+v, %v", report, err)
		}
		got, err := VerifyAttestation(ctx, store, desc, auth.verifier, ConformancePredicateType)
		if err != nil {
			t.Fatal(err)
		}
		var back ConformanceReport
		if err := json.Unmarshal(got.Predicate, &back); err != nil || !back.Passed || back.Authority != "authority.example" || back.ArtifactDigest != desc.Digest.String() {
			t.Fatalf("bundle=%v: predicate %s, %v", bundle, got.Predicate, err)
		}
	}
}
