package main

import (
	"database/sql"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/oa-dev/oa/audit"
	"github.com/oa-dev/oa/host"
)

func TestAuditExportVerifyCLI(t *testing.T) {
	h := coordinatorHost(t, false)
	c := openCoordinator(t, h)
	runClinic(t, c, "a", "AB-1234")
	runClinic(t, c, "b", "OF-0001")
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	cliOK(t, "receipts", "verify")
	keys := t.TempDir()
	pub, auth, hostKey := filepath.Join(keys, "p.pub"), filepath.Join(keys, "a.pub"), filepath.Join(keys, "h.pub")
	hostPub, err := os.ReadFile(filepath.Join(h.Home, host.HostPubFile))
	if err != nil {
		t.Fatal(err)
	}
	for path, b := range map[string][]byte{pub: h.PublisherPub, auth: h.AuthorityPub, hostKey: hostPub} {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bundle := filepath.Join(t.TempDir(), "clinic.tar")
	out := cliOK(t, "audit", "export", "-o", bundle)
	wantHas(t, "export", out, "deployment clinic", "2 receipts")
	if _, _, code := runCLI(t, "audit", "export", "--deployment", "nope", "-o", filepath.Join(t.TempDir(), "x.tar")); code != 2 {
		t.Fatalf("export of an unbound deployment: exit %d, want 2", code)
	}

	// The auditor's machine: the host folder is gone.
	t.Setenv("OA_HOME", filepath.Join(t.TempDir(), "absent"))
	out = cliOK(t, "audit", "verify", bundle, "--publisher-key", pub, "--authority-key", auth, "--host-key", hostKey)
	for _, want := range []string{"└── bundle", "publisher_signature", "conformance_attestation", "admission", "plan", "└── receipts", "└── teach", "audit ok"} {
		if !strings.Contains(out, want) {
			t.Fatalf("verify tree lacks %q:\n%s", want, out)
		}
	}
	out = cliOK(t, "audit", "verify", "--json", bundle, "--publisher-key", pub, "--authority-key", auth, "--host-key", hostKey)
	var r audit.Report
	wantJSON(t, "verify --json", out, &r)
	if !r.OK {
		t.Fatalf("verify --json: ok = false, want true:\n%s", out)
	}
	if r.Receipts == nil {
		t.Fatalf("verify --json: no receipts report:\n%s", out)
	}
	if r.Receipts.Receipts != 2 {
		t.Fatalf("verify --json: %d receipts, want 2", r.Receipts.Receipts)
	}
	var names []string
	for _, l := range r.Links {
		names = append(names, l.Name)
	}
	if want := []string{"bundle", "artifact", "worker_ir", "publisher_signature", "conformance_attestation", "admission", "registry", "connections", "projection", "plan", "binding", "receipts", "log", "teach", "decisions"}; !slices.Equal(names, want) {
		t.Fatalf("verify --json links %v, want %v", names, want)
	}
	// Keys swapped: the publisher key is not the one that signed.
	out, _ = cliRefused(t, "signature_untrusted", "audit", "verify", bundle, "--publisher-key", auth, "--authority-key", auth, "--host-key", hostKey)
	if !strings.Contains(out, "audit BROKEN at publisher_signature") {
		t.Fatalf("broken tree: %s", out)
	}
	if _, _, code := runCLI(t, "audit", "verify", bundle, "--publisher-key", pub); code != 2 {
		t.Fatalf("missing key flags: exit %d, want 2", code)
	}
	notTar := filepath.Join(t.TempDir(), "x.tar")
	os.WriteFile(notTar, []byte("not a tar"), 0o644)
	cliRefused(t, "audit_bundle_invalid", "audit", "verify", notTar, "--publisher-key", pub, "--authority-key", auth, "--host-key", hostKey)
	// The same genuine bundle under lower limits: refused before the
	// bytes over them are read, naming the flag that raises each.
	for flag, value := range map[string]string{"--max-document-bytes": "16", "--max-entries": "3", "--max-manifest-bytes": "64", "--max-bundle-bytes": "1024"} {
		out, errOut := cliRefused(t, "audit_bundle_too_large", "audit", "verify", bundle, "--publisher-key", pub, "--authority-key", auth, "--host-key", hostKey, flag, value)
		wantHas(t, flag+" "+value+" (stderr)", errOut, flag)
		wantHas(t, flag+" "+value+" (stdout)", out, "audit BROKEN at bundle")
	}
}

func TestAuditReceiptsVerifyCatchesAnEmptiedDatabase(t *testing.T) {
	h := coordinatorHost(t, false)
	c := openCoordinator(t, h)
	runClinic(t, c, "a", "AB-1234")
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	cliOK(t, "receipts", "verify")
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	db, err := sql.Open("sqlite", "file:"+filepath.Join(h.Home, host.StateFile)+"?"+q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range []string{"DROP TRIGGER receipts_no_delete", "DROP TRIGGER versions_no_delete", "DELETE FROM receipts", "DELETE FROM versions WHERE kind = 'checkpoint'", "DELETE FROM runs"} {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	out, _ := cliRefused(t, "receipt_checkpoint_mismatch", "receipts", "verify")
	if !strings.Contains(out, "BROKEN") {
		t.Fatalf("receipts verify: %s", out)
	}
}
