// Package demo prepares the built-in demo deployment on embedded defaults:
// the clinic example compiled, pushed to the host's OCI layout, signed by a
// publisher key and attested by an independent authority key (both made
// here), a host that trusts them, the release admitted, a signed starter
// registry, a verified sandbox connection, and the plan resolved and bound.
// It is what `oa quickstart` runs and what `oa coordinator serve` serves
// when no deployment is named; it uses the same library calls as the
// commands a person would type, nothing less.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oa-dev/oa/admit"
	"github.com/oa-dev/oa/bind"
	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/canonical"
	"github.com/oa-dev/oa/compiler"
	"github.com/oa-dev/oa/connection"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/sandbox"
	"github.com/oa-dev/oa/examples"
	"github.com/oa-dev/oa/oci"
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

// Keys is a key pair made for the demo, in cosign's format.
type Keys struct {
	Signer *oci.Signer
	Public []byte
}

// NewKeys makes a key pair.
func NewKeys() (Keys, error) {
	priv, pub, err := oci.GenerateKeys(nil)
	if err != nil {
		return Keys{}, err
	}
	s, err := oci.LoadSigner(priv, nil)
	return Keys{s, pub}, err
}

// Release is a published release in a host's OCI layout.
type Release struct {
	// Ref is the digest reference as the oa CLI reads it under the home.
	Ref    string
	Target oci.Target
	Desc   ocispec.Descriptor
	IR     string
}

// Publish compiles the bundle in dir, pushes it to the OCI layout under
// home, signs it with publisher and attests it with authority.
func Publish(ctx context.Context, home, dir string, publisher, authority *oci.Signer) (*Release, error) {
	res, err := compiler.Compile(dir)
	if err != nil {
		return nil, err
	}
	ref, err := oci.ParseRef(res.Worker.Name, oci.RefOptions{Home: home})
	if err != nil {
		return nil, err
	}
	target, err := oci.Open(ctx, ref, oci.OpenOptions{Create: true})
	if err != nil {
		return nil, err
	}
	r, err := PublishTo(ctx, target, ref, res, publisher, authority)
	if err != nil {
		return nil, err
	}
	r.Ref = res.Worker.Name + "@" + r.Desc.Digest.String()
	return r, nil
}

// PublishTo pushes a compiled bundle to target (which ref names: a layout
// or a registry repository), signs it as the publisher and attests it as
// the authority; Ref is ref pinned to the pushed digest.
func PublishTo(ctx context.Context, target oci.Target, ref oci.Ref, res *compiler.Result, publisher, authority *oci.Signer) (*Release, error) {
	r := &Release{IR: res.Digest, Target: target}
	var err error
	if r.Desc, err = oci.Push(ctx, target, res.Worker, res.IR, res.Worker.Version, oci.PackOptions{}); err != nil {
		return nil, err
	}
	if _, err := oci.Sign(ctx, target, ref.Name(), r.Desc, publisher); err != nil {
		return nil, err
	}
	art, err := oci.Fetch(ctx, target, r.Desc)
	if err != nil {
		return nil, err
	}
	pred, err := canonical.Marshal(oci.Conformance(art, authority.KeyID()))
	if err != nil {
		return nil, err
	}
	if _, err := oci.Attest(ctx, target, ref.Name(), r.Desc, oci.ConformancePredicateType, pred, authority); err != nil {
		return nil, err
	}
	r.Ref = ref.WithDigest(r.Desc.Digest).String()
	return r, nil
}

// Setup is a prepared demo host.
type Setup struct {
	Home       string
	Release    *Release
	Binding    *bind.Binding
	Deployment string
}

// CheckFresh refuses a home that is not a folder (home_not_folder) or
// that already holds any file of a host (host_exists): the demo never
// overwrites a host's keys, database or policy.
func CheckFresh(home string) error {
	if err := admit.CheckHome(home); err != nil {
		return err
	}
	for _, f := range []string{admit.PolicyFile, admit.HostKeyFile, admit.HostPubFile, admit.StateFile} {
		if _, err := os.Stat(filepath.Join(home, f)); !errors.Is(err, fs.ErrNotExist) {
			return blocking.New(blocking.HostExists, "the demo needs a folder without a host: %s exists", f)
		}
	}
	return nil
}

// Prepare runs the whole pipeline into home, which must not hold a host
// yet, telling each step to progress.
func Prepare(ctx context.Context, home string, progress io.Writer) (*Setup, error) {
	if err := CheckFresh(home); err != nil {
		return nil, err
	}
	step := func(format string, args ...any) { fmt.Fprintf(progress, "  ✓ "+format+"\n", args...) }
	now := time.Now()
	publisher, err := NewKeys()
	if err != nil {
		return nil, err
	}
	authority, err := NewKeys()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(home, "demo", "bundle")
	if err := examples.Write(examples.Default, dir); err != nil {
		return nil, err
	}
	rel, err := Publish(ctx, home, dir, publisher.Signer, authority.Signer)
	if err != nil {
		return nil, err
	}
	step("compiled %s (workerIrDigest %s)", examples.Default, rel.IR)
	step("pushed, signed by the publisher and attested by an independent authority: %s", rel.Ref)
	if err := admit.InitHost(home, admit.InitOptions{Host: HostName, Publishers: map[string][]byte{"demo_publisher": publisher.Public}, Authorities: map[string][]byte{"demo_authority": authority.Public}}); err != nil {
		return nil, err
	}
	h, err := admit.OpenHost(ctx, home)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	if _, _, err := h.Admit(ctx, rel.Target, rel.Desc, admit.AdmitOptions{AdmittedBy: Operator, Now: now}); err != nil {
		return nil, err
	}
	step("admitted on host %s by %s", HostName, Operator)
	regPath, err := resolve.InitRegistry(home, HostName)
	if err != nil {
		return nil, err
	}
	reg, err := resolve.LoadRegistry(regPath)
	if err != nil {
		return nil, err
	}
	if _, err := resolve.SignRegistry(ctx, h, reg, Operator, now); err != nil {
		return nil, err
	}
	step("capability registry signed (%s)", reg.Digest())
	change := connection.Change{By: Operator, Now: now}
	if _, err := connection.Add(ctx, h, connection.AddOptions{Name: Connection, Connector: resolve.SandboxConnector, Config: connector.Config{Command: connector.SandboxCommand}}, change); err != nil {
		return nil, err
	}
	if _, err := connection.Verify(ctx, h, Connection, connector.Options{SandboxDir: sandbox.Dir(home)}, change); err != nil {
		return nil, err
	}
	step("sandbox connection verified")
	plan, _, err := resolve.Compute(ctx, h, rel.Target, rel.Desc, resolve.Request{Deployment: Deployment, Model: Model}, resolve.ComputeOptions{Now: now, Probe: true, Connector: connector.Options{SandboxDir: sandbox.Dir(home)}})
	if err != nil {
		return nil, err
	}
	b, err := bind.Bind(ctx, h, rel.Ref, false, plan, bind.Approval{By: Operator, Approved: true, Now: now})
	if err != nil {
		return nil, err
	}
	step("plan %s resolved and bound to deployment %s", b.PlanDigest, Deployment)
	if err := os.WriteFile(filepath.Join(home, ReadyFile), []byte(b.PlanDigest+"\n"), 0o644); err != nil {
		return nil, err
	}
	return &Setup{Home: home, Release: rel, Binding: b, Deployment: Deployment}, nil
}
