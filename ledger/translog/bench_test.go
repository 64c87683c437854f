package translog_test

import (
	"context"
	"database/sql"
	"testing"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/oa-dev/oa/ledger/translog"
)

// BenchmarkAppend: what appending one receipt's leaf adds to its seal —
// the leaf, its stored hashes, the new root and the Ed25519-signed
// checkpoint, inside a write transaction as the seal's (the commit is the
// seal's own and is not counted) — on a log of 1,000 and of 100,000
// leaves.
func BenchmarkAppend(b *testing.B) {
	for _, size := range []struct {
		name string
		n    int
	}{{"1k", 1000}, {"100k", 100_000}} {
		b.Run(size.name, func(b *testing.B) {
			ctx := context.Background()
			l := newLog(b, "oa/bench")
			for i := 0; i < size.n; i += 10_000 {
				var batch []string
				for j := i; j < min(i+10_000, size.n); j++ {
					batch = append(batch, entry(j))
				}
				l.append(b, batch...)
			}
			next := size.n
			b.ReportAllocs()
			err := l.db.Write(ctx, "bench", func(tx *sql.Tx) error {
				for b.Loop() {
					if _, err := translog.Append(ctx, tx, l.key, []byte(entry(next))); err != nil {
						return err
					}
					next++
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkVerifyProof1M: `oa receipts verify-proof` of one receipt of a
// log of 1,000,000 leaves: parse, note.Open of the checkpoint, the
// 20-hash inclusion proof (tlog.CheckRecord). The tree is built in memory
// with tlog.StoredHashes (the same hashes the store keeps); proof-bytes
// is the size of the tlog-proof file.
func BenchmarkVerifyProof1M(b *testing.B) {
	const n = 1_000_000
	key, err := translog.LoadKey(b.TempDir(), "oa/bench")
	if err != nil {
		b.Fatal(err)
	}
	var hashes []tlog.Hash
	r := tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			out[i] = hashes[x]
		}
		return out, nil
	})
	for i := range int64(n) {
		h, err := tlog.StoredHashes(i, []byte(entry(int(i))), r)
		if err != nil {
			b.Fatal(err)
		}
		hashes = append(hashes, h...)
	}
	root, err := tlog.TreeHash(n, r)
	if err != nil {
		b.Fatal(err)
	}
	const idx = 765_432
	p, err := tlog.ProveRecord(n, idx, r)
	if err != nil {
		b.Fatal(err)
	}
	signed, err := note.Sign(&note.Note{Text: torchwood.Checkpoint{Origin: "oa/bench", Tree: tlog.Tree{N: n, Hash: root}}.String()}, translog.SignerOf(b, key))
	if err != nil {
		b.Fatal(err)
	}
	file := (&translog.Proof{Extra: []byte(entry(idx)), Index: idx, Hashes: p, Checkpoint: signed}).Marshal()
	policy := translog.Policy{Log: key.Verifier()}
	b.ReportAllocs()
	for b.Loop() {
		v, err := translog.VerifyProof(file, policy, nil)
		if err != nil || v.Index != idx {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(file)), "proof-bytes")
	b.ReportMetric(float64(len(p)), "proof-hashes")
}
