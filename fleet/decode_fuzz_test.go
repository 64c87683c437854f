package fleet

import (
	"bytes"
	"testing"

	"github.com/oa-dev/oa/internal/canonical"
)

// FuzzDecodeEnvelope: a document's payload comes from a registry anyone
// with push rights can write. Decoding never panics, and accepts exactly
// the canonical encoding of an envelope: nothing unknown, nothing after
// it, no second spelling of the same envelope.
func FuzzDecodeEnvelope(f *testing.F) {
	good, err := canonical.Marshal(Envelope{Type: EnvelopeType, Fleet: "clinics", Host: "h01", Seq: 1800000000, Deployment: "clinic",
		Release: "registry.example/oa/clinic-triage@sha256:" + string(bytes.Repeat([]byte("a"), 64)), ArtifactDigest: "sha256:" + string(bytes.Repeat([]byte("a"), 64)),
		Package: "clinic-triage", Version: "1.2.0", Model: "demo-model", Ceiling: Ceiling{Capabilities: []string{"records.read"}, MaxRisk: "read_only"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(append(append([]byte{}, good...), ' '))
	f.Add(bytes.Replace(good, []byte(`"seq":1800000000`), []byte(`"seq":1.8e9`), 1))
	f.Add(bytes.Replace(good, []byte(`{"artifactDigest"`), []byte(`{"extra":1,"artifactDigest"`), 1))
	f.Add([]byte(`{}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, payload []byte) {
		var env Envelope
		if (&document{Payload: payload}).decode(&env) != nil {
			return
		}
		again, err := canonical.Marshal(env)
		if err != nil || !bytes.Equal(again, payload) || !canonical.IsCanonical(payload) {
			t.Fatalf("accepted a payload that is not the canonical encoding of its envelope: %q", payload)
		}
	})
}
