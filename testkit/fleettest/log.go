package fleettest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/oa-dev/oa/fleet"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/internal/store"
	"github.com/oa-dev/oa/ledger/translog"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/pipeline"
)

// Witness is a test witness: its cosignature signer and its public key
// as a host policy names it.
type Witness struct {
	Signer *torchwood.CosignatureSigner
	Key    string
}

// NewWitness makes a witness named name, its key in a new folder.
func NewWitness(t testing.TB, name string) *Witness {
	t.Helper()
	s, err := translog.LoadWitnessKey(t.TempDir(), name)
	if err != nil {
		t.Fatal(err)
	}
	return &Witness{Signer: s, Key: s.Verifier().String()}
}

// AddWitnesses appends a witnessing section to h's policy naming ws
// (at a loopback URL nothing serves: tests cosign with Cosign) and quorum.
func (f *Fleet) AddWitnesses(h *Host, quorum int, ws ...*Witness) {
	f.T.Helper()
	var b bytes.Buffer
	b.WriteString("\nwitnessing: {\n\twitnesses: {\n")
	for i, w := range ws {
		fmt.Fprintf(&b, "\t\tw%d: {key: %q, url: %q}\n", i, w.Key, fmt.Sprintf("http://127.0.0.1:%d", 9+i))
	}
	fmt.Fprintf(&b, "\t}\n\tquorum: %d\n}\n", quorum)
	p := filepath.Join(h.Home, host.PolicyFile)
	old, err := os.ReadFile(p)
	if err != nil {
		f.T.Fatal(err)
	}
	if err := os.WriteFile(p, append(old, b.Bytes()...), 0o644); err != nil {
		f.T.Fatal(err)
	}
}

// AppendLog appends n leaves (random digests, as receipts' would be) to
// h's receipts log, signing the new checkpoint with its log key, as the
// ledger does when it seals receipts; it returns the new size.
func (f *Fleet) AppendLog(h *Host, n int) int64 {
	f.T.Helper()
	var size int64
	f.withLog(h, func(ctx context.Context, tx *sql.Tx) error {
		key, err := translog.LoadKey(h.Home, translog.Origin(h.ID))
		if err != nil {
			return err
		}
		entries := make([][]byte, n)
		for i := range entries {
			var b [32]byte
			rand.Read(b[:])
			entries[i] = fmt.Appendf(nil, "sha256:%x", sha256.Sum256(b[:]))
		}
		head, err := translog.Append(ctx, tx, key, entries...)
		if head != nil {
			size = head.N
		}
		return err
	})
	return size
}

// Cosign has each of ws cosign h's newest checkpoint and keeps the
// cosignatures with the log, as the coordinator does when its witnesses
// answer.
func (f *Fleet) Cosign(h *Host, ws ...*Witness) {
	f.T.Helper()
	f.withLog(h, func(ctx context.Context, tx *sql.Tx) error {
		head, err := translog.HeadOf(ctx, tx)
		if err != nil || head == nil {
			return fmt.Errorf("no checkpoint to cosign: %v", err)
		}
		text, _, _ := bytes.Cut(head.Note, []byte("\n\n"))
		for _, w := range ws {
			signed, err := note.Sign(&note.Note{Text: string(text) + "\n"}, w.Signer)
			if err != nil {
				return err
			}
			_, sigs, _ := bytes.Cut(signed, []byte("\n\n"))
			if err := translog.StoreCosignature(ctx, tx, head.N, w.Key, sigs); err != nil {
				return err
			}
		}
		return nil
	})
}

// withLog runs fn in a write transaction of h's store, opened as the
// test kits open it (the ledger owns it in program code).
func (f *Fleet) withLog(h *Host, fn func(ctx context.Context, tx *sql.Tx) error) {
	f.T.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(h.Home, host.StateFile))
	if err != nil {
		f.T.Fatal(err)
	}
	defer db.Close()
	if err := db.Write(ctx, "test log", func(tx *sql.Tx) error { return fn(ctx, tx) }); err != nil {
		f.T.Fatal(err)
	}
}

// CopyHost copies h's folder (closed) to a new one: the same host id,
// keys and log, which then go their own way — a fork, or an old copy
// restored (a rollback).
func (f *Fleet) CopyHost(h *Host) *Host {
	f.T.Helper()
	dst := f.T.TempDir()
	err := filepath.WalkDir(h.Home, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(h.Home, p)
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(to, info.Mode().Perm())
		case !info.Mode().IsRegular():
			return nil // sockets and links stay behind
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, info.Mode().Perm())
	})
	if err != nil {
		f.T.Fatal(err)
	}
	return &Host{ID: h.ID, Home: dst}
}

// PushLogs pushes, for each of hosts, the log checkpoint document its
// `oa provision` would push: a log of 1,000 entries (a random root) under
// its own new log key, cosigned by w (quorum 1), published at publishedAt,
// signed by key with its public key beside it, 16 at a time: a fleet of
// thousands of audited hosts without running thousands of provisions.
func (f *Fleet) PushLogs(hosts []string, key pipeline.Keys, w *Witness, publishedAt time.Time) {
	f.T.Helper()
	f.pushEach(hosts, func(ctx context.Context, target oci.Target, id string) error {
		skey, vkey, err := note.GenerateKey(rand.Reader, translog.Origin(id))
		if err != nil {
			return err
		}
		signer, err := note.NewSigner(skey)
		if err != nil {
			return err
		}
		var root tlog.Hash
		rand.Read(root[:])
		text := torchwood.Checkpoint{Origin: translog.Origin(id), Tree: tlog.Tree{N: 1000, Hash: root}}.String()
		signed, err := note.Sign(&note.Note{Text: text}, signer, w.Signer)
		if err != nil {
			return err
		}
		doc := fleet.LogCheckpoint{Type: fleet.LogType, Fleet: "clinics", Host: id, LogKey: vkey, Checkpoint: string(signed),
			Witnesses: []string{w.Key}, Quorum: 1, PublishedAt: publishedAt.UTC().Truncate(time.Second)}
		return pushDoc(ctx, target, fleet.LogArtifactType, fleet.LogTag(id), &doc, key)
	})
}
