package translog_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"testing"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/ledger/translog"
)

// TestVerifyProofGroupQuorum: a c2sp.org/tlog-policy quorum with nested
// groups (all of {ours, any of {a, b}}) is evaluated as groups, not a
// flat count: ours and a satisfy it; a and b, two cosignatures as well,
// do not (log_witness_quorum naming the group); Least is 2.
func TestVerifyProofGroupQuorum(t *testing.T) {
	ctx := context.Background()
	l := newLog(t, "oa/clinic-1")
	for i := range 4 {
		l.append(t, entry(i))
	}
	cp, err := translog.CheckpointAt(ctx, l.db, 4)
	if err != nil {
		t.Fatal(err)
	}
	text, _, _ := bytes.Cut(cp.Note, []byte("\n\n"))
	witness := func(name string) (note.Signer, note.Verifier) {
		_, priv, _ := ed25519.GenerateKey(rand.Reader)
		s, err := torchwood.NewCosignatureSigner(name, priv)
		if err != nil {
			t.Fatal(err)
		}
		v, err := translog.ParseVerifierKey(s.Verifier().String())
		if err != nil {
			t.Fatal(err)
		}
		return s, v
	}
	ourS, ours := witness("ours.example")
	aS, a := witness("a.example")
	bS, b := witness("b.example")
	others := &translog.Group{Name: "others", Threshold: 1, Witnesses: []note.Verifier{a, b}}
	main := &translog.Group{Name: "main", Threshold: 2, Witnesses: []note.Verifier{ours}, Groups: []*translog.Group{others}}
	if main.Least() != 2 {
		t.Fatalf("least %d", main.Least())
	}
	proofWith := func(signers ...note.Signer) []byte {
		signed, err := note.Sign(&note.Note{Text: string(text) + "\n"}, signers...)
		if err != nil {
			t.Fatal(err)
		}
		_, sigs, _ := bytes.Cut(signed, []byte("\n\n"))
		p, err := translog.Prove(ctx, l.db, []byte(entry(2)))
		if err != nil {
			t.Fatal(err)
		}
		p.Checkpoint = append(append([]byte{}, cp.Note...), sigs...)
		return p.Marshal()
	}
	policy := translog.Policy{Log: l.key.Verifier(), Witnesses: []note.Verifier{ours, a, b}, Group: main}
	if v, err := translog.VerifyProof(proofWith(ourS, aS), policy, nil); err != nil || len(v.Cosigners) != 2 {
		t.Fatalf("ours and a: %+v, %v", v, err)
	}
	_, err = translog.VerifyProof(proofWith(aS, bS), policy, nil)
	if !blocking.Has(err, blocking.LogWitnessQuorum) || !bytes.Contains([]byte(err.Error()), []byte("quorum main")) {
		t.Fatalf("a and b: %v, want log_witness_quorum naming main", err)
	}
	policy.Quorum = 2 // the flat count alone would have passed a and b
	if _, err := translog.VerifyProof(proofWith(aS, bS), policy, nil); !blocking.Has(err, blocking.LogWitnessQuorum) {
		t.Fatalf("a and b with a flat quorum of 2 and the group: %v", err)
	}
}
