package fleet

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"testing"
	"time"

	"github.com/oa-dev/oa/internal/canonical"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/signing"
)

// envelopeV1Fixture is a signed oa.fleet.envelope/v1, committed before v2
// existed: its payload, its signature and the fleet's public key.
func envelopeV1Fixture(t *testing.T) (payload, sig []byte, key *signing.Verifier) {
	t.Helper()
	b, err := os.ReadFile("testdata/envelope-v1.json")
	if err != nil {
		t.Fatal(err)
	}
	var f struct{ PublicKey, Payload, Signature string }
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	if sig, err = base64.StdEncoding.DecodeString(f.Signature); err != nil {
		t.Fatal(err)
	}
	if key, err = signing.LoadVerifier([]byte(f.PublicKey)); err != nil {
		t.Fatal(err)
	}
	return []byte(f.Payload), sig, key
}

// TestEnvelopeV1StillVerifies: an envelope signed as v1 (its ceiling in
// snake_case) verifies and decodes as a host reads it, its ceiling whole,
// and encodes back to the very bytes that were signed.
func TestEnvelopeV1StillVerifies(t *testing.T) {
	payload, sig, key := envelopeV1Fixture(t)
	doc := &document{Payload: payload, Signature: sig}
	if doc.verifiedBy([]*signing.Verifier{key}) == nil {
		t.Fatal("the v1 fixture does not verify")
	}
	var env Envelope
	if err := doc.decode(&env); err != nil {
		t.Fatalf("the v1 fixture does not decode: %v", err)
	}
	if env.Type != EnvelopeTypeV1 || !knownEnvelopeType(env.Type) {
		t.Fatalf("type %q", env.Type)
	}
	acme := env.Ceiling.Publishers["acme"]
	if env.Ceiling.MaxRisk != ir.Consequential || len(env.Ceiling.Capabilities) != 2 ||
		acme.Identity == nil || acme.Identity.IssuerRegexp == "" || acme.Identity.SubjectRegexp == "" ||
		acme.TrustedRootDigest == "" || env.Ceiling.Publishers["ops"].Key == "" {
		t.Fatalf("the v1 ceiling did not decode whole: %+v", env.Ceiling)
	}
}

// snakeKey finds a snake_case object key in JSON.
var snakeKey = regexp.MustCompile(`"[a-z]+_[a-z_]*":`)

// TestEnvelopeV2IsCamelCase: publishing writes oa.fleet.envelope/v2, every
// name in camelCase, the ceiling's too; it decodes back to the same
// envelope, and neither version reads the other's spelling.
func TestEnvelopeV2IsCamelCase(t *testing.T) {
	payload, _, _ := envelopeV1Fixture(t)
	var v1 Envelope
	if err := canonical.DecodeStrict(payload, &v1); err != nil {
		t.Fatal(err)
	}
	env := v1
	env.Type = EnvelopeType
	if env.Type == EnvelopeTypeV1 {
		t.Fatal("EnvelopeType is still v1")
	}
	b, err := canonical.Marshal(&env)
	if err != nil {
		t.Fatal(err)
	}
	if m := snakeKey.Find(b); m != nil {
		t.Fatalf("v2 envelope has snake_case name %s: %s", m, b)
	}
	for _, name := range []string{`"maxRisk":`, `"trustedRootDigest":`, `"issuerRegexp":`, `"subjectRegexp":`, `"workerIrDigest":`} {
		if !bytes.Contains(b, []byte(name)) {
			t.Fatalf("v2 envelope lacks %s: %s", name, b)
		}
	}
	var back Envelope
	if err := (&document{Payload: b}).decode(&back); err != nil || !reflect.DeepEqual(back, env) {
		t.Fatalf("v2 round trip: %v\n%+v\n%+v", err, back, env)
	}
	// Each version spelled in the other's casing is refused.
	mixed := [][]byte{
		bytes.Replace(b, []byte(`"maxRisk":`), []byte(`"max_risk":`), 1),
		bytes.Replace(payload, []byte(`"max_risk":`), []byte(`"maxRisk":`), 1),
	}
	for _, m := range mixed {
		var e Envelope
		if err := canonical.DecodeStrict(m, &e); err == nil {
			t.Fatalf("decoded %s", m)
		}
	}
}

// TestEnvelopeWithoutPublishers keeps an envelope without publishers
// without them in either version (envelopes without it keep their bytes).
func TestEnvelopeWithoutPublishers(t *testing.T) {
	for _, typ := range []string{EnvelopeTypeV1, EnvelopeType} {
		env := Envelope{Type: typ, Ceiling: Ceiling{Capabilities: []string{}, MaxRisk: ir.ReadOnly}, IssuedAt: time.Unix(0, 0).UTC(), ExpiresAt: time.Unix(60, 0).UTC()}
		b, err := canonical.Marshal(&env)
		if err != nil || bytes.Contains(b, []byte("publishers")) {
			t.Fatalf("%s: %v %s", typ, err, b)
		}
		var back Envelope
		if err := (&document{Payload: b}).decode(&back); err != nil || !reflect.DeepEqual(back, env) {
			t.Fatalf("%s round trip: %v %+v", typ, err, back)
		}
	}
}
