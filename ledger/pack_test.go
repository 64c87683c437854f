package ledger

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/oa-dev/oa/internal/store"
)

// Documents shaped like the rows the coordinator packs.
var packSamples = []string{
	`{"run_id":"run_7a7b7c8165e6d9bc8bd1feb1","deployment":"clinic","request_id":"hist-0","workflow":"append_triage_note","fingerprint":"hmac-sha256:DELUrnnWTPl7L8dDaaw7UMf-ttkiAkgSHkk-RyH56Fk","attempt":1,"status":"terminal","outcome":"done","reason":"verified","completed":["append_note"],"approved":[],"evidence":["note_saved"],"digests":{"append_note":"sha256:f21aa1256e6a80ebf84e6f7c451cd5adebd0981501bc166218b5288390004f13","confirm_note":"sha256:f5d87d39d2b4f8f739f72dbeeb2ee79ae3e9c0f1f90827b0017bda1f97717c2b"},"plan_digest":"sha256:ffae918417793b460804a44d2421435aa02ed538ef077081510bb25dcccf4438","binding_digest":"sha256:8435e2afdf614577cfba6055086f31d23dd0e3238b3d811680599cbb55ea802b","owner":{"pid":4580,"start":"2612045"},"receipt_digest":"sha256:a68a120feef1b62476d953c018acf6023b55ab7b47b34ab4bf332a3f412606c1","created_at":"2026-12-04T05:58:02.115454914Z","updated_at":"2026-12-04T05:58:02.167276585Z","mac":"hmac-sha256:bxTctTb-BevdxNY5BZYZYxTMwaW64JZu75KKVEZRGAM"}`,
	`{"at":"2026-12-04T05:58:02.167Z","attempt":1,"bindingDigest":"sha256:8435e2afdf614577cfba6055086f31d23dd0e3238b3d811680599cbb55ea802b","deployment":"clinic","evidence":["note_saved"],"evidenceDigests":{"append_note":"sha256:f21aa1256e6a80ebf84e6f7c451cd5adebd0981501bc166218b5288390004f13"},"fingerprint":"hmac-sha256:DELUrnnWTPl7L8dDaaw7UMf-ttkiAkgSHkk-RyH56Fk","host":"test-host","job":"append_triage_note","outcome":"done","planDigest":"sha256:ffae918417793b460804a44d2421435aa02ed538ef077081510bb25dcccf4438","prev":"","reason":"verified","runId":"run_7a7b7c8165e6d9bc8bd1feb1","seq":1,"type":"oa.receipt/v1"}`,
	`{"at":"2026-12-04T05:58:19.366Z","deployment":"clinic","head":"sha256:f589f256567dcfde63adcf65490f5063cf9a95399272b71a7b63dd927ee2f94a","host":"test-host","receiptKey":"sha256:0cab75bcd52d27198b92d533d8e4f284fdb43455b0e2bb46731afe48cd9ea220","runs":1269,"seq":1269,"type":"oa.receipt-checkpoint/v2"}`,
}

func TestPackRoundTripsAndShrinks(t *testing.T) {
	for _, doc := range packSamples {
		packed := historyPacking.Pack([]byte(doc))
		if packed[0] != packedV1 || len(packed) > len(doc)*2/3 {
			t.Errorf("packed %d bytes into %d (first byte %#x)", len(doc), len(packed), packed[0])
		}
		if got := historyPacking.Unpack(packed); string(got) != doc {
			t.Errorf("unpacked %q, want %q", got, doc)
		}
		// Rows stored before packing are read as they are.
		if got := historyPacking.Unpack([]byte(doc)); string(got) != doc {
			t.Errorf("plain row read as %q", got)
		}
	}
	// What would not shrink is stored as it is.
	for _, doc := range []string{`{}`, `{"receipt":1}`, ""} {
		if got := historyPacking.Pack([]byte(doc)); string(got) != doc {
			t.Errorf("historyPacking.Pack(%q) = %q", doc, got)
		}
	}
}

// A packed row edited, cut or extended never unpacks to the document
// that was packed: it is returned as it is, or as other bytes, and so
// fails the check of whatever it claims to be. The one exception is
// deflate's own: every packed row ends with an empty stored block (00 00
// FF FF after the byte its three header bits end in), and the bits of
// that byte after the header are padding the format ignores: at most 7.
func TestUnpackOfEditedRowsIsNotTheDocument(t *testing.T) {
	for _, doc := range packSamples {
		packed := historyPacking.Pack([]byte(doc))
		if !bytes.HasSuffix(packed, []byte{0, 0, 0xff, 0xff}) {
			t.Fatalf("a packed row does not end with an empty stored block: % x", packed[len(packed)-5:])
		}
		for _, row := range [][]byte{packed[:len(packed)-3], append(bytes.Clone(packed), 0)} {
			if string(historyPacking.Unpack(row)) == doc {
				t.Fatalf("a row cut or extended to %d bytes unpacks to the packed document", len(row))
			}
		}
		padding := 0
		for i := 1; i < len(packed); i++ {
			for bit := range 8 {
				flipped := bytes.Clone(packed)
				flipped[i] ^= 1 << bit
				if string(historyPacking.Unpack(flipped)) != doc {
					continue
				}
				if i != len(packed)-5 {
					t.Fatalf("a row with bit %d of byte %d flipped unpacks to the packed document", bit, i)
				}
				padding++
			}
		}
		if padding > 7 {
			t.Fatalf("%d flips of the last block's header byte unpack to the document; its padding is at most 7 bits", padding)
		}
	}
}

func FuzzUnpack(f *testing.F) {
	for _, doc := range packSamples {
		f.Add([]byte(doc))
		f.Add(historyPacking.Pack([]byte(doc)))
	}
	f.Fuzz(func(t *testing.T, row []byte) {
		doc := historyPacking.Unpack(row)
		if len(doc) > 4<<20 && !bytes.Equal(doc, row) {
			t.Fatalf("unpacked %d bytes", len(doc))
		}
		// Whatever a row unpacks to packs and unpacks back to itself.
		if again := historyPacking.Unpack(historyPacking.Pack(doc)); !bytes.Equal(again, doc) {
			t.Fatalf("round trip of %q gave %q", doc, again)
		}
	})
}

// BenchmarkUnpack: unpacking a run state, a receipt and a checkpoint,
// what reading one run's rows costs on top of SQLite.
func BenchmarkUnpack(b *testing.B) {
	var rows [][]byte
	for _, doc := range packSamples {
		rows = append(rows, historyPacking.Pack([]byte(doc)))
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, r := range rows {
			historyPacking.Unpack(r)
		}
	}
}

// BenchmarkPack: packing the same three documents.
func BenchmarkPack(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		for _, doc := range packSamples {
			historyPacking.Pack([]byte(doc))
		}
	}
}

// packedBefore are packSamples as internal/store packed them before the
// dictionary moved here (at 9ec8c30): the rows on disk. The ledger's
// packing must write exactly these bytes and read them back exactly.
var packedBefore = []string{
	"AbSTQU8TQBBG/4v3mpnZmZ1ZbhBQImAMFgm9kJ3dHWyKlUAVPPjfDcSo1Nqb591MvuS9t4ZJq7o2wywj9+LNvGMMx3V87Xq+nLd1iB/nd6sJPEdZb27Gsl+ubuf1alwuP6/GVrj7B8dnt8vl+fTdtR5b36/1Xs9OYrJaLea7i6v3h4vF5PTboeRXi//iwc+5Tzu3KvH44/KuPr49l+PPC794BWGtSJJHrgbDw3jk0MaCrUvtwzsUQwH0hjkTmguZpQIAHJieZi5jfvtp/bB0055KJ+ew0FRCqfsYTmNoqSON0iAwChipA6B6rxhFFbWR/9PZiDoKGqNqSc4ZDLgyd2JCTlIr0OiSbASogqEguJP01lowJ9vivHGSQTV6ZGRRbeE1gwhYjoSdUu8wEiXz1A0xG0gpzV1kVAPyv5phMfjdDWUkYNmWT81WkSDGCPRMrLkXSQ3QaosMlFykujqrJ67OHilRTcFIGXLDjfkhTYCnIDtiO0AvEYWFC/LmJtd/ZyXNYrI5VH+YttXUJ3vja394eyF7s4vZxcP05L6eZ34z+6JydPThYHb6evfkxfcfAQAA//8=",
	"AYzUQWsbMRAF4F+0ZUbSSLO+FdzigwultenRzGhGZlmzNfZC6b8PTmIcTBJ800GHJ/S+97bJGDpIG6AF8QLCF8zlwWJziuRBmrWMiUqpTSUDEXBuES1EM/AYIms0RswM1PdVlciFIeh9OephmIZ6x2P6O/vuLJf/eR+KHI8+2e5y7xatBRTBQNmzMLg2Tp5bqYmwGom5GvSMBKgVcw7ISoE59gCQGsbPzS2/rbenafqz+Xkoa7alyL+y/dG6eR6Hr+P+92ocu1//V5S/jzees5/n7vl8dfqafD4NsveXBzwotzXxHjlhKX3UlIEhSUoWUsAUSQSCG0X2BqUAIyGoBrJaa0sp8k3+A+SLFC2VMZNn67WyGjZXvE4BfrQFTwEAAP//",
	"AYSUO0pEQRBF92I+0l3frlmHkVnXDwbExJe6d0FF5SFMdvJ7zv1r8oTLoKfBV17XaY8o8nyeLV5ur7d4OLfUvKyBhUUzOktwZ7Qw2WgegtG2jdEMFFznVhfMNNAqaKP96+5Rb8flk//PcMR2ZY9kSNBpyw2SEXMVNSzqdEJi9lHgTqI4dxetSKsNMH6qnyD2rfAX3juU948AAAD//w==",
}

// TestPackedRowsAreTheOnesOnDisk: the dictionary moved out of the store
// without a byte of the format changing.
func TestPackedRowsAreTheOnesOnDisk(t *testing.T) {
	for i, doc := range packSamples {
		want, err := base64.StdEncoding.DecodeString(packedBefore[i])
		if err != nil {
			t.Fatal(err)
		}
		if got := historyPacking.Pack([]byte(doc)); !bytes.Equal(got, want) {
			t.Errorf("sample %d packs to other bytes than before", i)
		}
		if got := historyPacking.Unpack(want); string(got) != doc {
			t.Errorf("sample %d as stored before unpacks to %q", i, got)
		}
		// The store reads with the ledger's packing once the ledger is loaded.
		if got := store.Unpack(want); string(got) != doc || !strings.HasPrefix(doc, "{") {
			t.Errorf("the store does not read sample %d with the ledger's packing", i)
		}
	}
}
