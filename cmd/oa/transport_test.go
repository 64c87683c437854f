package main

import (
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oa-dev/oa/testkit/registrytest"
)

// TestRegistryCredentialsAndTLSFromTheCLI: against a TLS registry with
// htpasswd authentication, oa reads the credentials `docker login` /
// `oras login` store in the Docker config, refuses (exit 2, a fix line
// naming them) without them, and trusts the private CA only when told.
func TestRegistryCredentialsAndTLSFromTheCLI(t *testing.T) {
	p := newPublisher(t)
	reg := registrytest.StartWith(t, registrytest.Options{TLS: true, Users: map[string]string{"alice": "pw-for-test"}})
	docker, work := t.TempDir(), t.TempDir()
	oa := func(args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(oaBinary(t), args...)
		cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+docker)
		// oa pull writes into the working folder: a temporary one.
		cmd.Dir = work
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), code
	}
	ref := reg.Host() + "/oa/clinic"
	out, code := oa("push", "--ca-file", reg.CAFile, p.bundle, ref)
	wantExit(t, "push without credentials", code, 2, out, "")
	wantHas(t, "push without credentials", out, "registry_unauthorized", "docker login", "config.json")
	wantLacks(t, "push without credentials", out, "basic credential", "https://")
	cfg := `{"auths":{"` + reg.Host() + `":{"auth":"` + base64.StdEncoding.EncodeToString([]byte("alice:pw-for-test")) + `"}}}`
	if err := os.WriteFile(filepath.Join(docker, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	out, code = oa("push", p.bundle, ref)
	wantExit(t, "push without --ca-file", code, 2, out, "")
	wantHas(t, "push without --ca-file", out, "registry_tls_untrusted", "--ca-file")
	out, code = oa("push", "--ca-file", reg.CAFile, p.bundle, ref)
	at := strings.Index(out, "@sha256:")
	wantExit(t, "push with credentials", code, 0, out, "")
	if !strings.HasPrefix(out, ref) {
		t.Fatalf("push with credentials printed %q, want prefix %q", out, ref)
	}
	if at < 0 {
		t.Fatalf("push with credentials printed no @sha256: digest:\n%s", out)
	}
	pinned := ref + strings.TrimSpace(out[at:])
	if out, code = oa("pull", "--insecure", pinned); code != 0 {
		t.Fatalf("pull --insecure: exit %d\n%s", code, out)
	}
	out, code = oa("pull", "--plain-http=false", "--ca-file", filepath.Join(docker, "config.json"), pinned)
	wantExit(t, "pull with a junk --ca-file", code, 2, out, "")
	wantHas(t, "pull with a junk --ca-file", out, "registry_ca_invalid")
}

// TestExpiresInTooShort: a lifetime under a minute is refused before
// anything is read.
func TestExpiresInTooShort(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"fleet", "publish", "--fleet", filepath.Join(dir, "fleet.cue"), "--key", filepath.Join(dir, "k.key"), "--expires-in", "10s"},
		{"revoke", "sha256:" + strings.Repeat("a", 64), "--publish", "--fleet", filepath.Join(dir, "fleet.cue"), "--fleet-key", filepath.Join(dir, "k.key"), "--reason", "r", "--as", "A", "--expires-in", "0s"},
	} {
		out, errOut, code := runCLI(t, args...)
		what := "oa " + strings.Join(args, " ")
		wantExit(t, what, code, 2, out, errOut)
		wantHas(t, what, out+errOut, "fleet_expiry_invalid")
	}
}
