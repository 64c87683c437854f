package fleet

import (
	"testing"
	"time"

	"github.com/oa-dev/oa/internal/canonical"
)

// TestFleetRecordBytesUnchanged: the three records a host signs about a
// fleet share one head (fleetRecord), embedded so that their canonical
// JSON, the bytes the host key signed, stays what hosts already store;
// a change here would leave every stored record unreadable.
func TestFleetRecordBytesUnchanged(t *testing.T) {
	head := fleetRecord{Type: "T", Seq: 3, Fleet: "f", Host: "h"}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		rec  any
		want string
	}{
		{appliedRecord{fleetRecord: head, EnvelopeSeq: 7, EnvelopeDigest: "sha256:e"},
			`{"envelopeDigest":"sha256:e","envelopeSeq":7,"fleet":"f","host":"h","seq":3,"type":"T"}`},
		{revocationsRecord{fleetRecord: head, ListSeq: 2, ListDigest: "sha256:l"},
			`{"fleet":"f","host":"h","listDigest":"sha256:l","listSeq":2,"seq":3,"type":"T"}`},
		{provisionedRecord{fleetRecord: head, EnvelopeManifest: "sha256:m", EnvelopeExpiresAt: at, EnvelopeSeq: 7, StatusPushedAt: at},
			`{"deployment":"","envelopeExpiresAt":"2026-01-02T03:04:05Z","envelopeKey":"","envelopeManifest":"sha256:m","envelopeSeq":7,"fleet":"f","host":"h","localRef":"","planDigest":"","release":"","revocationsExpiresAt":"0001-01-01T00:00:00Z","revocationsKey":"","revocationsManifest":"","revocationsSeq":0,"seq":3,"statusPushedAt":"2026-01-02T03:04:05Z","type":"T"}`},
	} {
		got, err := canonical.Marshal(tc.rec)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.want {
			t.Errorf("%T signs as\n%s\nwant\n%s", tc.rec, got, tc.want)
		}
	}
}
