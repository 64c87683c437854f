package signing

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protodsse "github.com/sigstore/protobuf-specs/gen/pb-go/dsse"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
	"github.com/sigstore/sigstore-go/pkg/tlog"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/oci"
)

// The sigstore bundle path against sigstore-go's virtual Sigstore (a CA,
// a transparency log with real inclusion proofs and a TSA): bundles with a
// certificate, a log entry and a timestamp, stored as referrers.

const (
	vsSubject = "ci@acme.example"
	vsIssuer  = "https://token.actions.githubusercontent.com"
)

// vsRoot is the trusted root of the virtual Sigstore, as a file would
// hold it (round-tripped through trusted_root.json).
func vsRoot(t testing.TB, vs *ca.VirtualSigstore) *TrustedRoot {
	t.Helper()
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01, vs.FulcioCertificateAuthorities(), rawLogIDs(t, vs.CTLogs()), vs.TimestampingAuthorities(), rawLogIDs(t, vs.RekorLogs()))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := tr.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	r, err := LoadTrustedRoot(raw)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// rawLogIDs copies logs with their IDs as the raw key ids a
// trusted_root.json holds: the virtual Sigstore keeps them as hex text,
// which would be written as the bytes of that text.
func rawLogIDs(t testing.TB, logs map[string]*root.TransparencyLog) map[string]*root.TransparencyLog {
	t.Helper()
	out := map[string]*root.TransparencyLog{}
	for k, l := range logs {
		c := *l
		id, err := hex.DecodeString(string(l.ID))
		if err != nil {
			t.Fatal(err)
		}
		c.ID = id
		out[k] = &c
	}
	return out
}

// vsTamper, given as a proof to vsBundle, changes the log entry's
// inclusion proof after it was made.
const vsTamper = "tamper"

// vsBundle signs statement with a fresh certificate for identity and
// pushes it as a bundle referrer of subject; keep says which proofs of
// time the bundle carries ("tlog", "tsa"), and vsTamper damages the log
// entry's inclusion proof.
func vsBundle(t testing.TB, vs *ca.VirtualSigstore, st csStore, subject ocispec.Descriptor, identity string, stmt []byte, keep ...string) {
	t.Helper()
	ent, err := vs.AttestAtTime(identity, vsIssuer, stmt, time.Now().Add(5*time.Minute), true)
	if err != nil {
		t.Fatal(err)
	}
	vc, _ := ent.VerificationContent()
	sc, _ := ent.SignatureContent()
	env := sc.EnvelopeContent().RawEnvelope()
	sig := sc.Signature()
	vm := &protobundle.VerificationMaterial{
		Content: &protobundle.VerificationMaterial_Certificate{Certificate: &protocommon.X509Certificate{RawBytes: vc.Certificate().Raw}},
	}
	for _, k := range keep {
		switch k {
		case "tlog":
			vm.TlogEntries = []*protorekor.TransparencyLogEntry{vsTlogEntry(t, vs, ent)}
		case vsTamper:
			p := vm.TlogEntries[0].InclusionProof
			p.Hashes = append([][]byte{make([]byte, 32)}, p.Hashes...)
		case "tsa":
			stamps, _ := ent.Timestamps()
			vm.TimestampVerificationData = &protobundle.TimestampVerificationData{Rfc3161Timestamps: []*protocommon.RFC3161SignedTimestamp{{SignedTimestamp: stamps[0]}}}
		}
	}
	payload, err := env.DecodeB64Payload()
	if err != nil {
		t.Fatal(err)
	}
	pb := &protobundle.Bundle{
		MediaType:            oci.BundleMediaType,
		VerificationMaterial: vm,
		Content: &protobundle.Bundle_DsseEnvelope{DsseEnvelope: &protodsse.Envelope{
			Payload: payload, PayloadType: env.PayloadType, Signatures: []*protodsse.Signature{{Sig: sig}},
		}},
	}
	raw, err := protojson.Marshal(pb)
	if err != nil {
		t.Fatal(err)
	}
	var check bundle.Bundle
	if err := check.UnmarshalJSON(raw); err != nil {
		t.Fatalf("the bundle made does not parse: %v", err)
	}
	if _, err := pushBundle(context.Background(), st.target, subject, raw, nil); err != nil {
		t.Fatal(err)
	}
}

// vsTlogEntry is the protobuf log entry of ent's transparency-log entry:
// its canonical body, integrated time, the log's signed entry timestamp
// and an inclusion proof with a signed checkpoint, all by the virtual
// Sigstore's log.
func vsTlogEntry(t testing.TB, vs *ca.VirtualSigstore, ent *ca.TestEntity) *protorekor.TransparencyLogEntry {
	t.Helper()
	entries, _ := ent.TlogEntries()
	e := entries[0]
	tle := proto.Clone(e.TransparencyLogEntry()).(*protorekor.TransparencyLogEntry)
	var kv struct {
		Kind       string `json:"kind"`
		APIVersion string `json:"apiVersion"`
	}
	if err := json.Unmarshal(tle.CanonicalizedBody, &kv); err != nil {
		t.Fatal(err)
	}
	logID, err := vs.RekorLogID()
	if err != nil {
		t.Fatal(err)
	}
	set, err := vs.RekorSignPayload(tlog.RekorPayload{Body: base64.StdEncoding.EncodeToString(tle.CanonicalizedBody), IntegratedTime: tle.IntegratedTime, LogIndex: tle.LogIndex, LogID: logID})
	if err != nil {
		t.Fatal(err)
	}
	tle.KindVersion = &protorekor.KindVersion{Kind: kv.Kind, Version: kv.APIVersion}
	tle.InclusionPromise = &protorekor.InclusionPromise{SignedEntryTimestamp: set}
	return tle
}

// vsStatement is an in-toto statement of predicateType about subject.
func vsStatement(t testing.TB, subject ocispec.Descriptor, predicateType string, predicate any) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"_type": inTotoStatementV1, "predicateType": predicateType, "predicate": predicate,
		"subject": []map[string]any{{"name": "oa/clinic", "digest": map[string]string{"sha256": subject.Digest.Encoded()}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestIdentityBundleVirtualSigstore(t *testing.T) {
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatal(err)
	}
	tr := vsRoot(t, vs)
	st := csRegistry(t)
	ctx := context.Background()
	exact := Identity{Subject: vsSubject, Issuer: vsIssuer}
	verifier := func(t *testing.T, id Identity) *Verifier {
		v, err := NewIdentityVerifier(id, tr, IdentityOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	signed := func(t *testing.T, name string, keep ...string) ocispec.Descriptor {
		a := csPushWorker(t, st.target, name)
		vsBundle(t, vs, st, a, vsSubject, vsStatement(t, a, CosignSignPredicateType, map[string]any{}), keep...)
		return a
	}

	for _, c := range []struct {
		name string
		keep []string
		id   Identity
		code blocking.Code
	}{
		{"inclusion proof and timestamp", []string{"tlog", "tsa"}, exact, ""},
		{"inclusion proof only", []string{"tlog"}, exact, ""},
		{"timestamp only", []string{"tsa"}, exact, ""},
		{"no proof of time", nil, exact, blocking.CertificateTimeUnproven},
		{"another identity", []string{"tlog", "tsa"}, Identity{Subject: "other@acme.example", Issuer: vsIssuer}, blocking.CertificateIdentityMismatch},
		{"another issuer regexp", []string{"tlog", "tsa"}, Identity{Subject: vsSubject, IssuerRegexp: `^https://accounts\.google\.com$`}, blocking.CertificateIdentityMismatch},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := signed(t, "vs-"+strings.ReplaceAll(c.name, " ", "-"), c.keep...)
			res, err := VerifySignature(ctx, st.target, a, verifier(t, c.id))
			if c.code != "" {
				if r := blocking.Refusals(err); len(r) != 1 || r[0].Code != c.code {
					t.Fatalf("%v; want %s", err, c.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Form != FormBundle || res.Signer == nil || *res.Signer != (CertIdentity{vsSubject, vsIssuer}) {
				t.Fatalf("%+v signer %+v", res, res.Signer)
			}
		})
	}

	t.Run("a tampered inclusion proof is refused", func(t *testing.T) {
		a := signed(t, "vs-tampered", "tlog", vsTamper)
		if _, err := VerifySignature(ctx, st.target, a, verifier(t, exact)); !isCode(err, blocking.CertificateTimeUnproven) {
			t.Fatalf("%v; want certificate_time_unproven", err)
		}
	})

	t.Run("another virtual Sigstore's CA is refused", func(t *testing.T) {
		other, err := ca.NewVirtualSigstore()
		if err != nil {
			t.Fatal(err)
		}
		a := csPushWorker(t, st.target, "vs-other")
		vsBundle(t, other, st, a, vsSubject, vsStatement(t, a, CosignSignPredicateType, map[string]any{}), "tlog", "tsa")
		if _, err := VerifySignature(ctx, st.target, a, verifier(t, exact)); !isCode(err, blocking.CertificateUntrusted) {
			t.Fatalf("%v; want certificate_untrusted", err)
		}
	})

	t.Run("attestation by identity", func(t *testing.T) {
		a := csPushWorker(t, st.target, "vs-attested")
		vsBundle(t, vs, st, a, "authority@lab.example", vsStatement(t, a, ConformancePredicateType, map[string]any{"passed": true}), "tlog", "tsa")
		auth := verifier(t, Identity{Subject: "authority@lab.example", Issuer: vsIssuer})
		res, err := VerifyAttestation(ctx, st.target, a, auth, ConformancePredicateType, WithPublisher(verifier(t, exact)))
		if err != nil {
			t.Fatal(err)
		}
		if res.Signer == nil || res.Signer.Subject != "authority@lab.example" || res.Form != FormBundle {
			t.Fatalf("%+v", res)
		}
		// The publisher's identity attesting its own conformance is refused.
		vsBundle(t, vs, st, a, vsSubject, vsStatement(t, a, ConformancePredicateType, map[string]any{"passed": true}), "tlog", "tsa")
		if _, err := VerifyAttestation(ctx, st.target, a, auth, ConformancePredicateType, WithPublisher(verifier(t, exact))); !isCode(err, blocking.AttestationByPublisher) {
			t.Fatalf("%v; want attestation_by_publisher", err)
		}
	})
}

// isCode reports whether err is exactly one refusal with code.
func isCode(err error, code blocking.Code) bool {
	r := blocking.Refusals(err)
	return len(r) == 1 && r[0].Code == code
}
