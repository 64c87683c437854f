package pipeline_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/examples"
	"github.com/oa-dev/oa/pipeline"
)

// TestLoadWorkerFolderAndIRFileAgree: a bundle folder and the IR file
// compiled from it load as the same canonical IR, checked the same way.
func TestLoadWorkerFolderAndIRFileAgree(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	bundle := filepath.Join(dir, "bundle")
	if err := examples.Write(examples.Default, bundle); err != nil {
		t.Fatal(err)
	}
	w, fromFolder, err := pipeline.LoadWorker(ctx, bundle, pipeline.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "worker.ir.json")
	if err := os.WriteFile(file, fromFolder, 0o644); err != nil {
		t.Fatal(err)
	}
	fw, fromFile, err := pipeline.LoadWorker(ctx, file, pipeline.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fromFolder, fromFile) || fw.Name != w.Name || fw.Version != w.Version {
		t.Fatalf("the IR file loads as %s@%s (%d bytes), the folder as %s@%s (%d bytes)", fw.Name, fw.Version, len(fromFile), w.Name, w.Version, len(fromFolder))
	}
}

// TestLoadWorkerRefusesIRHostsRefuse: IR over MaxIRBytes is refused
// ir_too_large_for_hosts whether compiled or read, in the domain's words
// (no command-line flag in its detail); a path that is neither a folder nor a file is
// bundle_unreadable, and a folder given as an IR file is ir_unreadable.
func TestLoadWorkerRefusesIRHostsRefuse(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	bundle := filepath.Join(dir, "bundle")
	if err := examples.Write(examples.Default, bundle); err != nil {
		t.Fatal(err)
	}
	_, b, err := pipeline.LoadWorker(ctx, bundle, pipeline.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "worker.ir.json")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	under := pipeline.LoadOptions{MaxIRBytes: int64(len(b) - 1)}
	for _, path := range []string{bundle, file} {
		_, _, err := pipeline.LoadWorker(ctx, path, under)
		l := blocking.Refusals(err)
		if !blocking.Has(err, blocking.IRTooLargeForHosts) || strings.Contains(l[0].Detail, "--") {
			t.Errorf("%s over MaxIRBytes: %v, want ir_too_large_for_hosts without a flag name", filepath.Base(path), err)
		}
	}
	if _, _, err := pipeline.LoadWorker(ctx, file, pipeline.LoadOptions{MaxIRBytes: int64(len(b))}); err != nil {
		t.Errorf("IR of exactly MaxIRBytes: %v", err)
	}
	if _, _, err := pipeline.LoadWorker(ctx, filepath.Join(dir, "missing"), pipeline.LoadOptions{}); !blocking.Has(err, blocking.BundleUnreadable) {
		t.Errorf("missing path: %v, want bundle_unreadable", err)
	}
	if _, err := pipeline.ReadIRFile(bundle); !blocking.Has(err, blocking.IRUnreadable) {
		t.Errorf("a folder read as an IR file: %v, want ir_unreadable", err)
	}
}
