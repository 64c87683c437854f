package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oa-dev/oa/compiler"
	"github.com/oa-dev/oa/examples"
	"github.com/oa-dev/oa/signing"
	"github.com/oa-dev/oa/testkit/interoptest"
	"github.com/oa-dev/oa/testkit/registrytest"
)

// binaries builds oa once and returns it with the stock cue CLI (pinned as
// a tool in go.mod), so both are measured as the processes a publisher runs.
func binaries(b *testing.B) (oa, cue string) {
	return oaBinary(b), interoptest.Tool(b, "cue")
}

// BenchmarkCLICompile runs `oa compile` and `cue export` of the same bundle
// files side by side in one run; the ratio of their ns/op is reported in
// docs/PERFORMANCE.md.
func BenchmarkCLICompile(b *testing.B) {
	oa, cue := binaries(b)
	for _, name := range examples.Names() {
		dir := filepath.Join(b.TempDir(), name)
		if _, code := runCLIb(b, "init", "--example", name, dir); code != 0 {
			b.Fatal("init failed")
		}
		files, _ := filepath.Glob(filepath.Join(dir, "*.cue"))
		out := filepath.Join(b.TempDir(), "ir.json")
		b.Run("oa-compile/"+name, func(b *testing.B) {
			for b.Loop() {
				if err := exec.Command(oa, "compile", "-o", out, dir).Run(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("cue-export/"+name, func(b *testing.B) {
			for b.Loop() {
				cmd := exec.Command(cue, append([]string{"export", "--out", "json"}, files...)...)
				if err := cmd.Run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// runCLIb runs oa in-process for benchmark set-up and returns its
// standard output and exit status.
func runCLIb(b *testing.B, args ...string) (string, int) {
	b.Helper()
	var out strings.Builder
	var errOut nopWriter
	code := run(args, &out, &errOut)
	return out.String(), code
}

type nopWriter struct{}

func (*nopWriter) Write(p []byte) (int, error) { return len(p), nil }

// bigBundle writes the clinic example with a 1 MiB skill doc beside it and
// compiles it to an IR file; it returns the IR file and a folder holding
// the artifact's parts as files (what `oras push` is given).
func bigBundle(b *testing.B) (irFile, partsDir string, parts []string) {
	return benchBundle(b, true)
}

// benchBundle is bigBundle, with the 1 MiB skill doc only when big.
func benchBundle(b *testing.B, big bool) (irFile, partsDir string, parts []string) {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "bundle")
	if err := examples.Write(examples.Default, dir); err != nil {
		b.Fatal(err)
	}
	if !big {
		return bundleParts(b, dir)
	}
	var doc strings.Builder
	doc.WriteString("# Reference\n\n")
	for doc.Len() < 1<<20 {
		doc.WriteString("Read the record back after every note and report only what the record shows. ")
	}
	// Just under compiler.MaxBundleFileBytes, the most a bundle file holds.
	text := doc.String()[:compiler.MaxBundleFileBytes-1024]
	if err := os.WriteFile(filepath.Join(dir, "skills", "reference.md"), []byte(text), 0o644); err != nil {
		b.Fatal(err)
	}
	return bundleParts(b, dir)
}

// bundleParts compiles the bundle in dir to an IR file and writes the
// artifact's parts as files into a folder (what `oras push` is given).
func bundleParts(b *testing.B, dir string) (irFile, partsDir string, parts []string) {
	irFile = filepath.Join(b.TempDir(), "worker.ir.json")
	if _, code := runCLIb(b, "compile", "-o", irFile, dir); code != 0 {
		b.Fatal("compile failed")
	}
	partsDir = filepath.Join(b.TempDir(), "parts")
	layout := filepath.Join(b.TempDir(), "l2")
	out, code := runCLIb(b, "push", "--oci-layout", irFile, layout)
	if code != 0 {
		b.Fatal("push failed")
	}
	if _, code := runCLIb(b, "pull", "--oci-layout", "-o", partsDir, strings.TrimSpace(out)); code != 0 {
		b.Fatal("pull failed")
	}
	err := filepath.WalkDir(partsDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(partsDir, p)
			parts = append(parts, rel)
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return irFile, partsDir, parts
}

// BenchmarkPush1MiB runs `oa push` of a 1 MiB bundle's IR and `oras push`
// of the same parts as files to the loopback registry, side by side, each
// iteration to a new repository so every blob is sent.
func BenchmarkPush1MiB(b *testing.B) {
	irFile, partsDir, parts := bigBundle(b)
	benchPush(b, irFile, partsDir, parts)
}

// BenchmarkPushExample is BenchmarkPush1MiB for the clinic example as it
// is (eight small layers): what the blob uploads cost when the IR is
// small.
func BenchmarkPushExample(b *testing.B) {
	irFile, partsDir, parts := benchBundle(b, false)
	benchPush(b, irFile, partsDir, parts)
}

// benchPush runs `oa push IR` and `oras push PARTS…` side by side.
func benchPush(b *testing.B, irFile, partsDir string, parts []string) {
	oa, _ := binaries(b)
	oras := interoptest.Tool(b, "oras")
	reg := registrytest.Start(b)
	env := interoptest.Env(b)
	bins := map[string]string{"oa-push": oa}
	// OA_OLD_BIN, when set, is an earlier oa build measured in the same
	// run (old against new, for docs/PERFORMANCE.md).
	if old := os.Getenv("OA_OLD_BIN"); old != "" {
		bins["oa-old-push"] = old
	}
	for _, name := range []string{"oa-old-push", "oa-push"} {
		bin, ok := bins[name]
		if !ok {
			continue
		}
		b.Run(name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				i++
				cmd := exec.Command(bin, "push", irFile, fmt.Sprintf("%s/%s/n%d:v1", reg.Host(), name, i))
				cmd.Env = env
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v\n%s", err, out)
				}
			}
		})
	}
	b.Run("oras-push", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			args := append([]string{"push", "--plain-http", "--artifact-type", "application/vnd.oa.worker.v1", fmt.Sprintf("%s/oras-push/n%d:v1", reg.Host(), i)}, parts...)
			cmd := exec.Command(oras, args...)
			cmd.Dir, cmd.Env = partsDir, env
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%v\n%s", err, out)
			}
		}
	})
}

// BenchmarkCLIVerify runs `oa verify` (signature and attestation, and the
// artifact's digests) and the stock `cosign verify` plus
// `cosign verify-attestation` of the same artifact in the loopback
// registry, side by side, as processes.
func BenchmarkCLIVerify(b *testing.B) {
	oa, _ := binaries(b)
	cosign := interoptest.Tool(b, "cosign")
	reg := registrytest.Start(b)
	pinned, key := signedRelease(b, reg, "verify")
	env := interoptest.Env(b)
	exec1 := func(b *testing.B, bin string, args ...string) {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%s %v: %v\n%s", filepath.Base(bin), args, err, out)
		}
	}
	b.Run("oa-verify", func(b *testing.B) {
		for b.Loop() {
			exec1(b, oa, "verify", pinned, "--publisher-key", key("publisher.pub"), "--authority-key", key("authority.pub"))
		}
	})
	b.Run("cosign-verify-and-verify-attestation", func(b *testing.B) {
		for b.Loop() {
			exec1(b, cosign, "verify", "--key", key("publisher.pub"), "--insecure-ignore-tlog", pinned)
			exec1(b, cosign, "verify-attestation", "--key", key("authority.pub"), "--type", signing.ConformancePredicateType, "--insecure-ignore-tlog", pinned)
		}
	})
}

// BenchmarkCLIAdmit runs `oa admit --dry-run` (every admission check,
// including signature and attestation verification against the host
// policy) and the stock `cosign verify` plus `cosign verify-attestation` of
// the same artifact in the loopback registry, side by side, as processes.
// The dry run is measured so that each iteration does the same work; a
// real admission adds one SQLite insert (see store's benchmark).
func BenchmarkCLIAdmit(b *testing.B) {
	oa, _ := binaries(b)
	cosign := interoptest.Tool(b, "cosign")
	reg := registrytest.Start(b)
	pinned, key := signedRelease(b, reg, "admit")
	if _, code := runCLIb(b, "host", "init", "--publisher-key", key("publisher.pub"), "--authority-key", key("authority.pub")); code != 0 {
		b.Fatal("host init failed")
	}
	env := interoptest.Env(b, "OA_HOME="+os.Getenv("OA_HOME"))
	run := func(b *testing.B, bin string, args ...string) {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%s %v: %v\n%s", filepath.Base(bin), args, err, out)
		}
	}
	b.Run("oa-admit-dry-run", func(b *testing.B) {
		reg.ResetCounters()
		for b.Loop() {
			run(b, oa, "admit", "--dry-run", "--as", "bench", pinned)
		}
		b.ReportMetric(float64(reg.Requests())/float64(b.N), "requests/op")
	})
	b.Run("cosign-verify-and-verify-attestation", func(b *testing.B) {
		reg.ResetCounters()
		defer func() { b.ReportMetric(float64(reg.Requests())/float64(b.N), "requests/op") }()
		for b.Loop() {
			run(b, cosign, "verify", "--key", key("publisher.pub"), "--insecure-ignore-tlog", pinned)
			run(b, cosign, "verify-attestation", "--key", key("authority.pub"), "--type", signing.ConformancePredicateType, "--insecure-ignore-tlog", pinned)
		}
	})
}

// signedRelease sets up $OA_HOME with a publisher and an authority key
// pair, pushes the example bundle to reg under bench/NAME, signs and
// attests it, and returns the pinned reference and where the keys are.
func signedRelease(b *testing.B, reg *registrytest.Registry, name string) (string, func(string) string) {
	b.Helper()
	dir := b.TempDir()
	b.Setenv("OA_HOME", filepath.Join(dir, "home"))
	b.Setenv("COSIGN_PASSWORD", "bench")
	bundle := filepath.Join(dir, "bundle")
	key := func(name string) string { return filepath.Join(dir, name) }
	for _, s := range [][]string{
		{"init", bundle},
		{"keys", "generate", "--output-key-prefix", key("publisher")},
		{"keys", "generate", "--output-key-prefix", key("authority")},
	} {
		if _, code := runCLIb(b, s...); code != 0 {
			b.Fatalf("oa %v failed", s)
		}
	}
	out, code := runCLIb(b, "push", bundle, reg.Host()+"/bench/"+name)
	pinned := strings.TrimSpace(out)
	if code != 0 {
		b.Fatal("push failed")
	}
	for _, s := range [][]string{{"sign", "--key", key("publisher.key"), pinned}, {"attest", "--key", key("authority.key"), pinned}} {
		if _, code := runCLIb(b, s...); code != 0 {
			b.Fatalf("oa %v failed", s)
		}
	}
	return pinned, key
}
