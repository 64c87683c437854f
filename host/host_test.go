package host_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/internal/store"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/signing"
)

// openNew sets a host up under a new folder and opens it.
func openNew(t *testing.T) *host.Host {
	t.Helper()
	home := t.TempDir()
	if err := host.Init(home, host.InitOptions{Host: "test-host", Publishers: map[string][]byte{"acme": newPub(t)}}); err != nil {
		t.Fatal(err)
	}
	h, err := host.Open(context.Background(), home)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// TestRecordsSignedAndReadBack: a record signed with the host key reads
// back through ReadVersion as what was signed; an edited byte, another
// type or another sequence number does not read.
func TestRecordsSignedAndReadBack(t *testing.T) {
	ctx := context.Background()
	h := openNew(t)
	if h.Policy.Host != "test-host" || h.KeyID() == "" {
		t.Fatalf("host %q, key id %q", h.Policy.Host, h.KeyID())
	}
	type rec struct {
		Type string `json:"type"`
		Seq  int64  `json:"seq"`
		Note string `json:"note"`
	}
	if _, err := h.Versions().Insert(ctx, "test", "k", func(seq int64, _ *store.Version) ([]byte, []byte, error) {
		return h.SignRecord(rec{Type: "oa.test/v1", Seq: seq, Note: "hello"})
	}); err != nil {
		t.Fatal(err)
	}
	v, err := h.Versions().Latest(ctx, "test", "k")
	if err != nil || v == nil {
		t.Fatalf("latest = %v, %v", v, err)
	}
	var got rec
	if err := h.ReadVersion(v, "oa.test/v1", &got); err != nil || got.Note != "hello" || got.Seq != 1 {
		t.Fatalf("read back %+v, %v", got, err)
	}
	if err := h.ReadVersion(v, "oa.other/v1", &got); err == nil {
		t.Fatal("a record read as another type")
	}
	moved := *v
	moved.Seq = 2
	if err := h.ReadVersion(&moved, "oa.test/v1", &got); err == nil {
		t.Fatal("a record read under another sequence number")
	}
	edited := *v
	edited.Record = append([]byte(nil), v.Record...)
	edited.Record[len(edited.Record)-2] ^= 1
	if err := h.VerifyRecord(edited.Record, edited.Signature); err == nil {
		t.Fatal("an edited record verified")
	}
	// A verified signature is remembered; the answer stays the same.
	if err := h.VerifyRecord(v.Record, v.Signature); err != nil {
		t.Fatal(err)
	}
}

// TestOpenRefusals: a folder without a host, or whose key pair does not
// match, is host_not_initialized; a file for a folder is home_not_folder.
func TestOpenRefusals(t *testing.T) {
	ctx := context.Background()
	if _, err := host.Open(ctx, t.TempDir()); code(err) != blocking.HostNotInitialized {
		t.Fatalf("empty folder: %v", err)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := host.Open(ctx, file); code(err) != blocking.HomeNotFolder {
		t.Fatalf("file: %v", err)
	}
	h := openNew(t)
	other, _, err := signing.GenerateKeys(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.Home, host.HostKeyFile), other, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := h.PrepareSigner(); code(err) != blocking.HostNotInitialized {
		t.Fatalf("mismatched key pair: %v", err)
	}
}

// TestReadLimits: a folder without a policy reads with the default
// limits, a host's with its policy's.
func TestReadLimits(t *testing.T) {
	if l, err := host.ReadLimits(t.TempDir()); err != nil || l != oci.DefaultLimits() {
		t.Fatalf("no host: %+v, %v", l, err)
	}
	h := openNew(t)
	if l, err := host.ReadLimits(h.Home); err != nil || l != h.Policy.ReadLimits() {
		t.Fatalf("host: %+v, %v", l, err)
	}
}
