package translog_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"filippo.io/torchwood"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/internal/store"
	"github.com/oa-dev/oa/ledger/translog"
)

// testLog is a log in a real store of a fresh home.
type testLog struct {
	db   *store.DB
	key  *translog.Key
	home string
}

func newLog(t testing.TB, origin string) *testLog {
	t.Helper()
	home := t.TempDir()
	db, err := store.Open(context.Background(), filepath.Join(home, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	key, err := translog.LoadKey(home, origin)
	if err != nil {
		t.Fatal(err)
	}
	return &testLog{db: db, key: key, home: home}
}

func (l *testLog) append(t testing.TB, entries ...string) *translog.Head {
	t.Helper()
	var h *translog.Head
	err := l.db.Write(context.Background(), "append", func(tx *sql.Tx) error {
		var b [][]byte
		for _, e := range entries {
			b = append(b, []byte(e))
		}
		var err error
		h, err = translog.Append(context.Background(), tx, l.key, b...)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func entry(i int) string { return fmt.Sprintf("sha256:%064x", i) }

func codeOf(err error) blocking.Code {
	var b *blocking.Error
	if errors.As(err, &b) {
		return b.Code
	}
	return ""
}

// TestProofsVerifyWithStandardVerifiers: every leaf of a log of 300
// entries (past one full tile), appended one and many at a time, has a
// tlog-proof that verifies with VerifyProof and, taken apart, with the
// standard verifiers alone: note.Open with the log's public key,
// torchwood.ParseCheckpoint, x/mod's tlog.CheckRecord and
// transparency-dev/merkle's proof.VerifyInclusion.
func TestProofsVerifyWithStandardVerifiers(t *testing.T) {
	ctx := context.Background()
	l := newLog(t, "oa/clinic-1")
	for i := range 100 {
		l.append(t, entry(i))
	}
	var batch []string
	for i := 100; i < 300; i++ {
		batch = append(batch, entry(i))
	}
	head := l.append(t, batch...)
	if head.N != 300 {
		t.Fatalf("size %d", head.N)
	}
	vkey, err := note.NewVerifier(l.key.VerifierKey())
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 1, 99, 100, 255, 256, 299} {
		p, err := translog.Prove(ctx, l.db, []byte(entry(i)))
		if err != nil {
			t.Fatal(err)
		}
		file := p.Marshal()
		v, err := translog.VerifyProof(file, translog.Policy{Log: l.key.Verifier()}, nil)
		if err != nil || v.Index != int64(i) || v.Size != 300 || v.Entry != entry(i) || v.Origin != "oa/clinic-1" {
			t.Fatalf("leaf %d: %+v, %v", i, v, err)
		}
		// The standard verifiers, on the file's parts.
		_, cp, _ := bytes.Cut(file, []byte("\n\n"))
		n, err := note.Open(cp, note.VerifierList(vkey))
		if err != nil {
			t.Fatalf("note.Open: %v", err)
		}
		c, err := torchwood.ParseCheckpoint(n.Text)
		if err != nil || c.Origin != "oa/clinic-1" {
			t.Fatalf("checkpoint %q: %v", n.Text, err)
		}
		parsed, err := translog.ParseProof(file)
		if err != nil {
			t.Fatal(err)
		}
		leaf := tlog.RecordHash([]byte(entry(i)))
		if err := tlog.CheckRecord(parsed.Hashes, c.N, c.Hash, parsed.Index, leaf); err != nil {
			t.Fatalf("tlog.CheckRecord: %v", err)
		}
		var hashes [][]byte
		for _, h := range parsed.Hashes {
			hashes = append(hashes, h[:])
		}
		if err := proof.VerifyInclusion(rfc6962.DefaultHasher, uint64(parsed.Index), uint64(c.N), rfc6962.DefaultHasher.HashLeaf([]byte(entry(i))), hashes, c.Hash[:]); err != nil {
			t.Fatalf("merkle proof.VerifyInclusion: %v", err)
		}
	}
}

// TestProofRefusals: an edited, cut or foreign proof is refused with a
// named code, never a panic or a pass.
func TestProofRefusals(t *testing.T) {
	ctx := context.Background()
	l := newLog(t, "oa/clinic-1")
	for i := range 10 {
		l.append(t, entry(i))
	}
	p, err := translog.Prove(ctx, l.db, []byte(entry(3)))
	if err != nil {
		t.Fatal(err)
	}
	good := p.Marshal()
	other := newLog(t, "oa/clinic-1") // same origin, another key
	policy := translog.Policy{Log: l.key.Verifier()}
	edited := *p
	edited.Hashes = append(tlog.RecordProof{}, p.Hashes...)
	edited.Hashes[1][0] ^= 1
	wrongIndex := *p
	wrongIndex.Index = 4
	beyond := *p
	beyond.Index = 10
	for name, c := range map[string]struct {
		file   []byte
		policy translog.Policy
		entry  []byte
		want   blocking.Code
	}{
		"edited hash":        {edited.Marshal(), policy, nil, blocking.LogProofInvalid},
		"other index":        {wrongIndex.Marshal(), policy, nil, blocking.LogProofInvalid},
		"index beyond":       {beyond.Marshal(), policy, nil, blocking.LogProofInvalid},
		"other entry":        {good, policy, []byte(entry(4)), blocking.LogProofInvalid},
		"another log key":    {good, translog.Policy{Log: other.key.Verifier()}, nil, blocking.LogCheckpointUnverified},
		"no key":             {good, translog.Policy{}, nil, blocking.LogKeyInvalid},
		"cut":                {good[:len(good)/2], policy, nil, blocking.LogProofInvalid},
		"no header":          {append([]byte("x"), good...), policy, nil, blocking.LogProofInvalid},
		"too large":          {bytes.Repeat([]byte("a"), translog.MaxProofBytes+1), policy, nil, blocking.LogProofInvalid},
		"quorum not met":     {good, translog.Policy{Log: l.key.Verifier(), Quorum: 1}, nil, blocking.LogWitnessQuorum},
		"index with zeros":   {bytes.Replace(good, []byte("index 3"), []byte("index 03"), 1), policy, nil, blocking.LogProofInvalid},
		"edited checkpoint":  {bytes.Replace(good, []byte("\n10\n"), []byte("\n11\n"), 1), policy, nil, blocking.LogCheckpointUnverified},
		"hash line not hash": {bytes.Replace(good, []byte("index 3\n"), []byte("index 3\nAAAA\n"), 1), policy, nil, blocking.LogProofInvalid},
	} {
		v, err := translog.VerifyProof(c.file, c.policy, c.entry)
		if codeOf(err) != c.want {
			t.Errorf("%s: %+v, %v; want %s", name, v, err, c.want)
		}
	}
	if _, err := translog.Prove(ctx, l.db, []byte(entry(99))); codeOf(err) != blocking.LogEntryUnknown {
		t.Errorf("proving an unknown entry: %v", err)
	}
}

// TestForksAreCaught: two checkpoints of one size with different roots,
// a tree not extending an older one, and a smaller tree after a larger
// one are each log_forked — for CheckConsistency (what the witness runs)
// and for VerifyProof given the checkpoint seen before.
func TestForksAreCaught(t *testing.T) {
	ctx := context.Background()
	a := newLog(t, "oa/clinic-1")
	b := newLog(t, "oa/clinic-1")
	for i := range 8 {
		a.append(t, entry(i))
		if i == 3 {
			b.append(t, "forked")
		} else {
			b.append(t, entry(i))
		}
	}
	a5, _ := translog.CheckpointAt(ctx, a.db, 5)
	a8, _ := translog.CheckpointAt(ctx, a.db, 8)
	b5, _ := translog.CheckpointAt(ctx, b.db, 5)
	b8, _ := translog.CheckpointAt(ctx, b.db, 8)
	good, err := translog.ProveConsistency(ctx, a.db, 5, 8)
	if err != nil {
		t.Fatal(err)
	}
	if err := translog.CheckConsistency(a5.Tree, a8.Tree, good); err != nil {
		t.Fatalf("an honest log: %v", err)
	}
	forked, err := translog.ProveConsistency(ctx, b.db, 5, 8)
	if err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"same size, other root": translog.CheckConsistency(a5.Tree, b5.Tree, nil),
		"not a prefix":          translog.CheckConsistency(a5.Tree, b8.Tree, forked),
		"not a prefix, a proof": translog.CheckConsistency(a5.Tree, b8.Tree, good),
		"rolled back":           translog.CheckConsistency(a8.Tree, a5.Tree, nil),
	} {
		if codeOf(err) != blocking.LogForked {
			t.Errorf("%s: %v, want log_forked", name, err)
		}
	}
	p, err := translog.Prove(ctx, b.db, []byte(entry(0)))
	if err != nil {
		t.Fatal(err)
	}
	seen := a8.Tree
	if _, err := translog.VerifyProof(p.Marshal(), translog.Policy{Log: b.key.Verifier(), Seen: &seen}, nil); codeOf(err) != blocking.LogForked {
		t.Errorf("verify-proof with the other branch's checkpoint seen: %v, want log_forked", err)
	}
}

// TestCosignatureVerifierReadsTorchwood: a witness's cosignature made by
// torchwood's CosignatureSigner verifies with the verifier oa makes from
// the witness's public key, counts toward the quorum, and another
// witness's key does not count.
func TestCosignatureVerifierReadsTorchwood(t *testing.T) {
	ctx := context.Background()
	l := newLog(t, "oa/clinic-1")
	l.append(t, entry(0), entry(1))
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	w, err := torchwood.NewCosignatureSigner("witness.example", priv)
	if err != nil {
		t.Fatal(err)
	}
	wv, err := translog.ParseVerifierKey(w.Verifier().String())
	if err != nil {
		t.Fatal(err)
	}
	_, priv2, _ := ed25519.GenerateKey(rand.Reader)
	w2, _ := torchwood.NewCosignatureSigner("witness2.example", priv2)
	wv2, _ := translog.ParseVerifierKey(w2.Verifier().String())
	head, _ := translog.HeadOf(ctx, l.db)
	n, err := note.Open(head.Note, note.VerifierList(l.key.Verifier()))
	if err != nil {
		t.Fatal(err)
	}
	cosigned, err := note.Sign(n, w)
	if err != nil {
		t.Fatal(err)
	}
	p := translog.Proof{Extra: []byte(entry(1)), Index: 1, Checkpoint: cosigned}
	p.Hashes = tlog.RecordProof{tlog.RecordHash([]byte(entry(0)))}
	v, err := translog.VerifyProof(p.Marshal(), translog.Policy{Log: l.key.Verifier(), Witnesses: []note.Verifier{wv, wv2}, Quorum: 1}, nil)
	if err != nil || len(v.Cosigners) != 1 || v.Cosigners[0] != "witness.example" {
		t.Fatalf("%+v, %v", v, err)
	}
	if _, err := translog.VerifyProof(p.Marshal(), translog.Policy{Log: l.key.Verifier(), Witnesses: []note.Verifier{wv2}, Quorum: 1}, nil); codeOf(err) != blocking.LogWitnessQuorum {
		t.Fatalf("another witness's key: %v", err)
	}
}

// TestTilesServeALogThatTorchwoodReads: the tiles ReadTile serves at
// their c2sp.org/tlog-tiles paths are the log: x/mod's tile hash reader
// over them proves a leaf against the signed root, and the entry bundle
// holds the entries.
func TestTilesServeALogThatTorchwoodReads(t *testing.T) {
	ctx := context.Background()
	l := newLog(t, "oa/clinic-1")
	var all []string
	for i := range 700 {
		all = append(all, entry(i))
	}
	head := l.append(t, all...)
	r := tlog.TileHashReader(head.Tree, tileReader{ctx, l.db})
	p, err := tlog.ProveRecord(head.N, 600, r)
	if err != nil {
		t.Fatal(err)
	}
	if err := tlog.CheckRecord(p, head.N, head.Hash, 600, tlog.RecordHash([]byte(entry(600)))); err != nil {
		t.Fatal(err)
	}
	bundle, err := translog.ReadTile(ctx, l.db, "tile/entries/002.p/188")
	if err != nil {
		t.Fatal(err)
	}
	e, _, err := torchwood.ReadTileEntry(bundle)
	if err != nil || string(e) != entry(512) {
		t.Fatalf("first entry of bundle 2: %q, %v", e, err)
	}
	if _, err := translog.ReadTile(ctx, l.db, "tile/0/003"); codeOf(err) != blocking.LogEntryUnknown {
		t.Fatalf("a tile beyond the log: %v", err)
	}
	if _, err := translog.ReadTile(ctx, l.db, "../etc/passwd"); codeOf(err) != blocking.LogProofInvalid {
		t.Fatalf("not a tile path: %v", err)
	}
}

type tileReader struct {
	ctx context.Context
	q   translog.Querier
}

func (r tileReader) Height() int { return torchwood.TileHeight }
func (r tileReader) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	var out [][]byte
	for _, t := range tiles {
		b, err := translog.ReadTile(r.ctx, r.q, torchwood.TilePath(t))
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}
func (r tileReader) SaveTiles([]tlog.Tile, [][]byte) {}

// TestLogKeyIsMadeOnceAndHeldToItsOrigin: the key is made once per home
// (a second load is the same key), its public half is written beside it,
// and a home whose key names another origin is refused.
func TestLogKeyIsMadeOnceAndHeldToItsOrigin(t *testing.T) {
	home := t.TempDir()
	k1, err := translog.LoadKey(home, "oa/a")
	if err != nil {
		t.Fatal(err)
	}
	k2, err := translog.LoadKey(home, "oa/a")
	if err != nil || k2.VerifierKey() != k1.VerifierKey() {
		t.Fatalf("second load: %v", err)
	}
	v, err := translog.ReadVerifierKey(filepath.Join(home, translog.PublicKeyFile))
	if err != nil || v.Name() != "oa/a" || v.KeyHash() != k1.Verifier().KeyHash() {
		t.Fatalf("public key file: %v", err)
	}
	if _, err := translog.LoadKey(home, "oa/b"); codeOf(err) != blocking.LogKeyInvalid {
		t.Fatalf("a key of another origin: %v", err)
	}
	if _, err := translog.ReadVerifierKey("not a key"); codeOf(err) != blocking.LogKeyInvalid {
		t.Fatalf("not a key: %v", err)
	}
}
