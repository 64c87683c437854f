package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// editLayout rewrites the manifest tagged v1 in the layout at dir with
// edit (stored as a new blob, index.json pointing at it) and returns the
// pinned layout reference of the new manifest.
func editLayout(t *testing.T, dir string, edit func(m map[string]any)) string {
	t.Helper()
	idxPath := filepath.Join(dir, "index.json")
	raw, err := os.ReadFile(idxPath)
	if err != nil {
		t.Fatal(err)
	}
	var idx ocispec.Index
	if err := json.Unmarshal(raw, &idx); err != nil {
		t.Fatal(err)
	}
	at := -1
	for i, d := range idx.Manifests {
		if d.Annotations[ocispec.AnnotationRefName] == "v1" {
			at = i
		}
	}
	if at < 0 {
		t.Fatal("no v1 in the layout")
	}
	blob := func(d digest.Digest) string { return filepath.Join(dir, "blobs", "sha256", d.Encoded()) }
	mraw, err := os.ReadFile(blob(idx.Manifests[at].Digest))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(mraw, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	out, _ := json.Marshal(m)
	d := digest.FromBytes(out)
	if err := os.WriteFile(blob(d), out, 0o644); err != nil {
		t.Fatal(err)
	}
	idx.Manifests[at].Digest, idx.Manifests[at].Size = d, int64(len(out))
	raw, _ = json.Marshal(idx)
	if err := os.WriteFile(idxPath, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir + ":v1@" + d.String()
}

// TestPathDigestInALayoutIsARefusal: a digest made to name a path, in a
// layout manifest's layer or in index.json, is a named refusal (exit 2)
// for pull, verify and copy, never exit 1 with raw text.
func TestPathDigestInALayoutIsARefusal(t *testing.T) {
	p := newPublisher(t)
	dir := filepath.Join(t.TempDir(), "layout")
	p.ok("push", "--oci-layout", p.bundle, dir+":v1")
	pinned := editLayout(t, dir, func(m map[string]any) {
		m["layers"].([]any)[1].(map[string]any)["digest"] = "sha256:../../../../etc/passwd"
	})
	for _, args := range [][]string{
		{"pull", "--oci-layout", pinned, "-o", filepath.Join(t.TempDir(), "out")},
		{"verify", "--oci-layout", pinned, "--publisher-key", p.path("publisher.pub"), "--authority-key", p.path("authority.pub")},
		{"copy", "--from-oci-layout", "--to-oci-layout", pinned, filepath.Join(t.TempDir(), "dst") + ":v1"},
	} {
		text := p.refused("descriptor_invalid", args...)
		if strings.Contains(text, "passwd") {
			t.Fatalf("%s repeats the digest:\n%s", args[0], text)
		}
	}
	// index.json itself naming a path.
	raw, _ := os.ReadFile(filepath.Join(dir, "index.json"))
	at := strings.Index(string(raw), `"digest":"sha256:`)
	bad := string(raw[:at]) + `"digest":"sha256:../../../../etc/passwd"` + string(raw[at+len(`"digest":"sha256:`)+64+1:])
	if err := os.WriteFile(filepath.Join(dir, "index.json"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	p.refused("layout_invalid", "pull", "--oci-layout", dir+":v1", "-o", filepath.Join(t.TempDir(), "out"))
}

// TestExpiresInTooLong: a lifetime over 720h is refused
// (fleet_expiry_invalid, exit 2) before anything is read.
func TestExpiresInTooLong(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"fleet", "publish", "--fleet", filepath.Join(dir, "fleet.cue"), "--key", filepath.Join(dir, "k.key"), "--expires-in", "1000000h"},
		{"revoke", "sha256:" + strings.Repeat("a", 64), "--publish", "--fleet", filepath.Join(dir, "fleet.cue"), "--fleet-key", filepath.Join(dir, "k.key"), "--reason", "r", "--as", "A", "--expires-in", "721h"},
	} {
		out, errOut, code := runCLI(t, args...)
		what := "oa " + strings.Join(args, " ")
		wantExit(t, what, code, 2, out, errOut)
		wantHas(t, what, out+errOut, "fleet_expiry_invalid", "720h")
	}
}
