package signing

import (
	"context"
	"strings"
	"testing"

	"oras.land/oras-go/v2"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/examples"
	"github.com/oa-dev/oa/internal/canonical"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/schemas"
	"github.com/oa-dev/oa/testkit/exampletest"
)

// pushEdited pushes the example's IR after edit, re-encoding it and
// refreshing the digests edit invalidates, as a careless or hostile
// publisher's own tooling could. oci.Push itself checks nothing.
func pushEdited(t *testing.T, edit func(w *ir.Worker)) (*oci.Artifact, oras.Target) {
	t.Helper()
	res := exampletest.Compile(t, examples.Default)
	w := res.Worker
	edit(w)
	for i := range w.Evaluators {
		w.Evaluators[i].Digest = ir.DigestBytes([]byte(w.Evaluators[i].Source))
	}
	b, err := ir.Encode(w)
	if err != nil {
		t.Fatal(err)
	}
	store := csLayout(t).target
	ctx := context.Background()
	desc, err := oci.Push(ctx, store, w, b, "v1", oci.PackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	art, err := oci.Fetch(ctx, store, desc, schemas.CheckFetchedIR)
	if err != nil {
		t.Fatal(err)
	}
	return art, store
}

func failedChecks(r *ConformanceReport) string { return strings.Join(r.Failed(), ",") }

func TestConformancePassesForCompiledExamples(t *testing.T) {
	for _, name := range examples.Names() {
		res := exampletest.Compile(t, name)
		store := csLayout(t).target
		desc, err := oci.Push(context.Background(), store, res.Worker, res.IR, "", oci.PackOptions{})
		if err != nil {
			t.Fatal(err)
		}
		art, err := oci.Fetch(context.Background(), store, desc, schemas.CheckFetchedIR)
		if err != nil {
			t.Fatal(err)
		}
		r := Conformance(art, "authority.example")
		if !r.Passed || len(r.Checks) != 6 || r.Err() != nil || r.WorkerIRDigest != res.Digest || r.ArtifactDigest != desc.Digest.String() {
			t.Fatalf("%s: report %+v", name, r)
		}
	}
}

func TestConformanceNamesTheFailedCheck(t *testing.T) {
	cases := []struct {
		name string
		edit func(w *ir.Worker)
		want string
	}{
		{"customer state", func(w *ir.Worker) { w.Jobs[0].Purpose += " Mail triage.lead@clinic.example." }, CheckNoCustomerState},
		{"impure component", func(w *ir.Worker) {
			w.Evaluators[0].Source = strings.Replace(w.Evaluators[0].Source, "package component\n", "package component\n\nimport \"tool/exec\"\n", 1)
		}, CheckComponentsPure},
		{"component out of scope", func(w *ir.Worker) {
			w.Evaluators[2].Source = strings.Replace(w.Evaluators[2].Source, "input.record_ref", "input.nope", 1) // record_lookup
		}, CheckComponentsPure},
		{"check through a consequential capability", func(w *ir.Worker) { w.Jobs[0].Steps[3].Capability = "records.note.append" }, CheckRisksConsistent},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			art, _ := pushEdited(t, c.edit)
			r := Conformance(art, "authority.example")
			if r.Passed || !strings.Contains(failedChecks(r), c.want) {
				t.Fatalf("failed checks %q, want %s", failedChecks(r), c.want)
			}
			l := blocking.Refusals(r.Err())
			if len(l) == 0 || l[0].Code != blocking.ConformanceFailed {
				t.Fatalf("Err() = %v", r.Err())
			}
			if strings.Contains(r.Err().Error(), "triage.lead") {
				t.Fatal("the refusal echoes the customer state it found")
			}
		})
	}
}

// TestVerifyChainLinks proves each link of the chain reports its own
// refusal and that a good chain holds end to end.
func TestVerifyChainLinks(t *testing.T) {
	ctx := context.Background()
	keys := func() (*Signer, *Verifier) {
		priv, pub, err := GenerateKeys([]byte("pw"))
		if err != nil {
			t.Fatal(err)
		}
		s, err := LoadSigner(priv, []byte("pw"))
		if err != nil {
			t.Fatal(err)
		}
		v, err := LoadVerifier(pub)
		if err != nil {
			t.Fatal(err)
		}
		return s, v
	}
	pubS, pubV := keys()
	authS, authV := keys()
	res := exampletest.Compile(t, examples.Default)
	store := csLayout(t).target
	desc, err := oci.Push(ctx, store, res.Worker, res.IR, "v1", oci.PackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	chain := VerifyChain(ctx, &oci.Release{Target: store, Descriptor: desc}, pubV, authV)
	if got := linkCodes(chain); got != "artifact ok,worker_ir ok,publisher_signature signature_missing,conformance_attestation attestation_missing" {
		t.Fatalf("unsigned chain: %s", got)
	}
	if _, err := Sign(ctx, store, desc, WriteOptions{Signer: pubS, Repository: "oa.local/clinic"}); err != nil {
		t.Fatal(err)
	}
	art, err := oci.Fetch(ctx, store, desc, schemas.CheckFetchedIR)
	if err != nil {
		t.Fatal(err)
	}
	report := Conformance(art, "authority.example")
	predicate, _ := canonical.Marshal(report)
	if _, err := Attest(ctx, store, desc, ConformancePredicateType, predicate, WriteOptions{Signer: authS, Repository: "oa.local/clinic"}); err != nil {
		t.Fatal(err)
	}
	chain = VerifyChain(ctx, &oci.Release{Target: store, Descriptor: desc}, pubV, authV)
	if chain.Err() != nil || chain.Report == nil || !chain.Report.Passed {
		t.Fatalf("good chain: %s %v", linkCodes(chain), chain.Err())
	}
	// Keys swapped: the signature is not by the "publisher", and the
	// attestation is by the key now named as publisher.
	if got := linkCodes(VerifyChain(ctx, &oci.Release{Target: store, Descriptor: desc}, authV, pubV)); got != "artifact ok,worker_ir ok,publisher_signature signature_untrusted,conformance_attestation attestation_by_publisher" {
		t.Fatalf("swapped keys: %s", got)
	}
	// A report that vouches for another IR, signed by the authority.
	other := *report
	other.WorkerIRDigest = "sha256:" + strings.Repeat("1", 64)
	bad, _ := canonical.Marshal(&other)
	otherStore := csLayout(t).target
	if _, err := oci.Push(ctx, otherStore, res.Worker, res.IR, "v1", oci.PackOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Sign(ctx, otherStore, desc, WriteOptions{Signer: pubS, Repository: "oa.local/clinic"}); err != nil {
		t.Fatal(err)
	}
	if _, err := Attest(ctx, otherStore, desc, ConformancePredicateType, bad, WriteOptions{Signer: authS, Repository: "oa.local/clinic"}); err != nil {
		t.Fatal(err)
	}
	if got := linkCodes(VerifyChain(ctx, &oci.Release{Target: otherStore, Descriptor: desc}, pubV, authV)); !strings.HasSuffix(got, "conformance_attestation attestation_ir_mismatch") {
		t.Fatalf("report for another IR: %s", got)
	}
}

func linkCodes(c *Chain) string {
	parts := make([]string, len(c.Links))
	for i, l := range c.Links {
		state := "ok"
		if !l.OK() {
			state = string(l.Refusal.Code)
		}
		parts[i] = l.Name + " " + state
	}
	return strings.Join(parts, ",")
}
