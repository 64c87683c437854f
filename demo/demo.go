// Package demo prepares the built-in demo deployment on embedded defaults:
// the clinic example compiled, pushed to the host's OCI layout, signed by a
// publisher key and attested by an independent authority key (both made
// here), a host that trusts them, the release admitted, a signed starter
// registry, a verified sandbox connection, and the plan resolved and bound.
// It is what `oa quickstart` runs and what `oa coordinator serve` serves
// when no deployment is named; it is the library's front door
// (pipeline.Publish, pipeline.PrepareHost) on the demo's names, nothing
// less.
//
// DriveSandbox connects an MCP client to an `oa coordinator serve`
// subprocess and runs the workflow once for every sandbox case (Cases), as
// `oa quickstart` does; Ensure prepares the demo once under a lock, for
// coordinators starting together.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/oa-dev/oa/bind"
	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/sandbox"
	"github.com/oa-dev/oa/examples"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/pipeline"
	"github.com/oa-dev/oa/resolve"
)

// Names of the demo.
const (
	Deployment = "clinic"
	Model      = "demo-model"
	Operator   = "Demo Operator"
	Connection = "sandbox"
	HostName   = "oa-demo"
)

// ReadyFile is written under the home last, once the demo is prepared:
// a folder without it holds a demo that was never finished.
const ReadyFile = "demo/ready"

// Setup is a prepared demo host.
type Setup struct {
	Home       string
	Release    *pipeline.Published
	Binding    *bind.Binding
	Deployment string
}

// CheckFresh refuses a home that is not a folder (home_not_folder) or
// that already holds any file of a host (host_exists): the demo never
// overwrites a host's keys, database or policy.
func CheckFresh(home string) error {
	if err := host.CheckHome(home); err != nil {
		return err
	}
	for _, f := range []string{host.PolicyFile, host.HostKeyFile, host.HostPubFile, host.StateFile} {
		if _, err := os.Stat(filepath.Join(home, f)); !errors.Is(err, fs.ErrNotExist) {
			return blocking.New(blocking.HostExists, "the demo needs a folder without a host: %s exists", f)
		}
	}
	return nil
}

// Ensure makes sure home holds a finished demo host, preparing it when it
// holds none, and reports whether this call prepared it. Several
// processes may call it at once on the same new home (two sandbox
// coordinators starting together): an exclusive lock on a file beside
// home (home + ".lock") lets one prepare while the others wait for it and
// then find the demo ready. A home left half prepared is refused
// (host_exists), never prepared over.
func Ensure(ctx context.Context, home string, progress io.Writer) (bool, error) {
	if Ready(home) {
		return false, nil
	}
	if err := os.MkdirAll(filepath.Dir(home), 0o700); err != nil {
		return false, err
	}
	lock, err := os.OpenFile(home+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return false, err
	}
	defer lock.Close() // closing the file releases the lock
	if err := flockWait(ctx, lock); err != nil {
		return false, err
	}
	if Ready(home) {
		return false, nil // prepared meanwhile by the holder of the lock
	}
	if _, err := os.Stat(filepath.Join(home, host.PolicyFile)); err == nil {
		return false, blocking.New(blocking.HostExists, "the sandbox demo host was never finished; remove the demo folder under $OA_HOME and start again")
	}
	_, err = Prepare(ctx, home, progress)
	return err == nil, err
}

// Ready reports whether home holds a finished demo host.
func Ready(home string) bool {
	_, err := os.Stat(filepath.Join(home, ReadyFile))
	return err == nil
}

// flockWait takes an exclusive lock on f, waiting for another holder
// until ctx ends.
func flockWait(ctx context.Context, f *os.File) error {
	for delay := time.Millisecond; ; delay = min(2*delay, 100*time.Millisecond) {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			return fmt.Errorf("demo: lock %s: %w", f.Name(), err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
	}
}

// Prepare runs the whole pipeline into home, which must not hold a host
// yet, telling each step to progress.
func Prepare(ctx context.Context, home string, progress io.Writer) (*Setup, error) {
	if err := CheckFresh(home); err != nil {
		return nil, err
	}
	step := func(line string) { fmt.Fprintf(progress, "  ✓ %s\n", line) }
	now := time.Now()
	publisher, err := pipeline.NewKeys()
	if err != nil {
		return nil, err
	}
	authority, err := pipeline.NewKeys()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(home, "demo", "bundle")
	if err := examples.Write(examples.Default, dir); err != nil {
		return nil, err
	}
	rel, err := pipeline.Publish(ctx, home, dir, publisher.Signer, authority.Signer)
	if err != nil {
		return nil, err
	}
	step(fmt.Sprintf("compiled %s (workerIrDigest %s)", examples.Default, rel.IR))
	step("pushed, signed by the publisher and attested by an independent authority: " + rel.Ref.String())
	if err := host.Init(home, host.InitOptions{Host: HostName, Publishers: map[string][]byte{"demo_publisher": publisher.Public}, Authorities: map[string][]byte{"demo_authority": authority.Public}}); err != nil {
		return nil, err
	}
	h, err := host.Open(ctx, home)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	b, err := pipeline.PrepareHost(ctx, h, pipeline.HostOptions{
		Release: rel, By: Operator, Now: now,
		Connections: []pipeline.Connection{{Name: Connection, Connector: resolve.SandboxConnector, Config: connector.Config{Command: connector.SandboxCommand}}},
		Connector:   connector.Options{SandboxDir: sandbox.Dir(home)},
		Deployment:  Deployment, Model: Model,
		Progress: step,
	})
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(home, ReadyFile), []byte(b.PlanDigest+"\n"), 0o644); err != nil {
		return nil, err
	}
	return &Setup{Home: home, Release: rel, Binding: b, Deployment: Deployment}, nil
}
