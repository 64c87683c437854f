package signing

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"

	cbundle "github.com/sigstore/cosign/v2/pkg/cosign/bundle"
	"github.com/sigstore/cosign/v2/pkg/oci/static"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/tlog"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

// legacyEntity is a legacy `.sig` or `.att` layer signed with a
// certificate, as `cosign sign --certificate … --certificate-chain …`
// writes it, presented to sigstore-go's verifier: the certificate from the
// layer's annotation, the RFC 3161 timestamp and the transparency-log
// bundle (SET) from theirs. The chain annotation is not trusted: the
// trusted root's certificate authorities carry the intermediates, as with
// cosign's `--trusted-root`.
type legacyEntity struct {
	verify.BaseSignedEntity
	cert    *x509.Certificate
	content verify.SignatureContent
	stamps  [][]byte
	entries []*tlog.Entry
	// badEntry is set when the rekor bundle annotation cannot be decoded:
	// the entity then has a log entry that cannot verify.
	badEntry bool
}

// errBadLogEntry is what TlogEntries returns for an undecodable entry.
var errBadLogEntry = errors.New("the transparency-log bundle annotation cannot be decoded")

// legacyCertificate is the certificate a layer's annotations carry, or nil.
func legacyCertificate(annotations map[string]string) *x509.Certificate {
	pemCert := annotations[static.CertificateAnnotationKey]
	if pemCert == "" {
		return nil
	}
	certs, err := cryptoutils.UnmarshalCertificatesFromPEM([]byte(pemCert))
	if err != nil || len(certs) != 1 {
		return nil
	}
	return certs[0]
}

// newLegacyEntity builds the entity of a layer with annotations and
// signature content; nil when the layer has no certificate. Timestamps and
// log entries that cannot be decoded are kept as undecodable (a timestamp
// as its raw bytes, which then fails to verify) so that a damaged proof
// never passes as an absent one.
func newLegacyEntity(annotations map[string]string, content verify.SignatureContent) *legacyEntity {
	cert := legacyCertificate(annotations)
	if cert == nil {
		return nil
	}
	e := &legacyEntity{cert: cert, content: content}
	if raw := annotations[static.RFC3161TimestampAnnotationKey]; raw != "" {
		var ts cbundle.RFC3161Timestamp
		if json.Unmarshal([]byte(raw), &ts) != nil || len(ts.SignedRFC3161Timestamp) == 0 {
			e.stamps = [][]byte{[]byte(raw)}
		} else {
			e.stamps = [][]byte{ts.SignedRFC3161Timestamp}
		}
	}
	if raw := annotations[static.BundleAnnotationKey]; raw != "" {
		if entry := rekorEntry(raw); entry != nil {
			e.entries = []*tlog.Entry{entry}
		} else {
			e.badEntry = true
		}
	}
	return e
}

// rekorEntry decodes cosign's rekor bundle annotation into a log entry
// with its inclusion promise (SET); nil when it cannot be decoded.
func rekorEntry(raw string) *tlog.Entry {
	var rb cbundle.RekorBundle
	if json.Unmarshal([]byte(raw), &rb) != nil {
		return nil
	}
	body, _ := rb.Payload.Body.(string)
	bodyBytes, err1 := base64.StdEncoding.DecodeString(body)
	logID, err2 := hex.DecodeString(rb.Payload.LogID)
	var kind struct {
		Kind       string `json:"kind"`
		APIVersion string `json:"apiVersion"`
	}
	if err1 != nil || err2 != nil || json.Unmarshal(bodyBytes, &kind) != nil {
		return nil
	}
	entry, err := tlog.NewTlogEntry(&protorekor.TransparencyLogEntry{
		LogIndex: rb.Payload.LogIndex, LogId: &protocommon.LogId{KeyId: logID},
		KindVersion:    &protorekor.KindVersion{Kind: kind.Kind, Version: kind.APIVersion},
		IntegratedTime: rb.Payload.IntegratedTime, CanonicalizedBody: bodyBytes,
		InclusionPromise: &protorekor.InclusionPromise{SignedEntryTimestamp: rb.SignedEntryTimestamp},
	})
	if err != nil {
		return nil
	}
	return entry
}

// HasInclusionPromise is true when the layer carries a rekor bundle.
func (e *legacyEntity) HasInclusionPromise() bool { return len(e.entries) > 0 || e.badEntry }

// VerificationContent is the layer's certificate.
func (e *legacyEntity) VerificationContent() (verify.VerificationContent, error) {
	return bundle.NewCertificate(e.cert), nil
}

// SignatureContent is the layer's signature or envelope.
func (e *legacyEntity) SignatureContent() (verify.SignatureContent, error) { return e.content, nil }

// Timestamps are the layer's RFC 3161 timestamps.
func (e *legacyEntity) Timestamps() ([][]byte, error) { return e.stamps, nil }

// TlogEntries are the layer's transparency-log entries; an error when its
// rekor bundle cannot be decoded.
func (e *legacyEntity) TlogEntries() ([]*tlog.Entry, error) {
	if e.badEntry {
		return nil, errBadLogEntry
	}
	return e.entries, nil
}

// Version is the bundle version whose verification rules apply.
func (e *legacyEntity) Version() (string, error) { return "v0.3", nil }

// legacyEnvelopeContent is a legacy `.att` envelope: cosign timestamps the
// whole envelope, not its signature, so Signature (what a timestamp is
// checked against) is the envelope's bytes.
type legacyEnvelopeContent struct {
	*bundle.Envelope
	raw []byte
}

// Signature is the bytes cosign's timestamp covers.
func (c legacyEnvelopeContent) Signature() []byte { return c.raw }

// EnvelopeContent is the envelope.
func (c legacyEnvelopeContent) EnvelopeContent() verify.EnvelopeContent { return c.Envelope }

// MessageSignatureContent is nil: an envelope is not a message signature.
func (c legacyEnvelopeContent) MessageSignatureContent() verify.MessageSignatureContent { return nil }
