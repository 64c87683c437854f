// Package fleettest builds fleets for tests: a release pushed to a
// registrytest registry, signed and attested; a fleet key; and hosts, each
// a real host folder whose policy trusts the publisher, the authority and
// the fleet, with a signed starter registry and a verified sandbox
// connection. Nothing is mocked.
package fleettest

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oa-dev/oa/fleet"
	"github.com/oa-dev/oa/testkit/hosttest"

	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/internal/canonical"

	"github.com/oa-dev/oa/compiler"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/sandbox"
	"github.com/oa-dev/oa/examples"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/pipeline"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/signing"
	"github.com/oa-dev/oa/testkit/registrytest"
)

// Operator names the person in test host records.
const Operator = "Test Operator"

// Fleet is a test fleet: a registry, the publisher, authority and fleet
// keys and one published release.
type Fleet struct {
	T         testing.TB
	Registry  *registrytest.Registry
	Publisher pipeline.Keys
	Authority pipeline.Keys
	Key       pipeline.Keys
	// KeyFile and PubFile hold the fleet key in cosign's format (password
	// "fleet-password").
	KeyFile, PubFile string
	// Release is the release's registry reference REGISTRY/REPO@sha256:….
	Release string
	Desc    ocispec.Descriptor
	// Repository is the fleet's repository HOST/REPO.
	Repository string
}

// KeyPassword is the fleet key file's password.
const KeyPassword = "fleet-password"

// New starts a registry and publishes the clinic example to it, signed by
// a publisher and attested by an independent authority.
func New(t testing.TB) *Fleet {
	t.Helper()
	f := &Fleet{T: t, Registry: registrytest.Start(t)}
	f.Publisher, f.Authority = hosttest.SharedKeys(t)
	priv, key, err := fleetKey()
	if err != nil {
		t.Fatal(err)
	}
	f.Key = key
	pub := key.Public
	dir := t.TempDir()
	f.KeyFile, f.PubFile = filepath.Join(dir, "fleet.key"), filepath.Join(dir, "fleet.pub")
	if err := os.WriteFile(f.KeyFile, priv, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.PubFile, pub, 0o644); err != nil {
		t.Fatal(err)
	}
	f.Repository = f.Registry.Host() + "/fleet/clinics"
	f.Release, f.Desc = f.Publish(nil)
	return f
}

// fleetKey is the fleet's signing key pair (sealed with KeyPassword, as
// an operator's fleet key is), made once per process: every key costs a
// scrypt to make and one to open.
func fleetKey() (priv []byte, key pipeline.Keys, err error) {
	fleetKeyOnce.Do(func() { fleetPriv, fleetKeys, fleetErr = newFleetKey() })
	return fleetPriv, fleetKeys, fleetErr
}

// newFleetKey makes a fleet key pair sealed with KeyPassword and opens it:
// the sealed private key, and the opened signer with its public key.
func newFleetKey() (priv []byte, key pipeline.Keys, err error) {
	if priv, key.Public, err = signing.GenerateKeys([]byte(KeyPassword)); err != nil {
		return nil, pipeline.Keys{}, err
	}
	key.Signer, err = signing.LoadSigner(priv, []byte(KeyPassword))
	return priv, key, err
}

var (
	fleetKeyOnce sync.Once
	fleetPriv    []byte
	fleetKeys    pipeline.Keys
	fleetErr     error
)

// Publish compiles the clinic example (edited by edit, when not nil),
// pushes it to REGISTRY/oa/clinic-triage, signs and attests it, and
// returns its digest reference.
func (f *Fleet) Publish(edit func(dir string)) (string, ocispec.Descriptor) {
	t := f.T
	t.Helper()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "bundle")
	if err := examples.Write(examples.Default, dir); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(dir)
	}
	res, err := compiler.Compile(dir)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := oci.ParseRef(f.Registry.Host()+"/oa/"+res.Worker.Name, oci.RefOptions{})
	if err != nil {
		t.Fatal(err)
	}
	target, err := oci.Open(ctx, ref, oci.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rel, err := pipeline.PublishTo(ctx, target, ref, res, f.Publisher.Signer, f.Authority.Signer)
	if err != nil {
		t.Fatal(err)
	}
	return rel.Ref.String(), rel.Descriptor
}

// Host is one test host.
type Host struct {
	ID   string
	Home string
}

// HostOptions vary a test host.
type HostOptions struct {
	// PreApprove lets the fleet pre-approve bindings.
	PreApprove bool
	// NoFleet leaves the fleet section out of the policy.
	NoFleet bool
	// ConnectionRevisions verifies the sandbox connection this many times
	// with a new configuration each (default 1): another revision, so
	// another plan digest.
	ConnectionRevisions int
}

// NewHost makes host id in a new folder: host key, a policy trusting the
// fleet's publisher, authority and (unless NoFleet) fleet key, a signed
// starter registry and a verified sandbox connection.
func (f *Fleet) NewHost(id string, opts HostOptions) *Host {
	t := f.T
	t.Helper()
	ctx := context.Background()
	h := &Host{ID: id, Home: t.TempDir()}
	if err := host.Init(h.Home, host.InitOptions{Host: id, Publishers: map[string][]byte{"publisher": f.Publisher.Public}, Authorities: map[string][]byte{"authority": f.Authority.Public}, HostKey: hosttest.PoolKey(t)}); err != nil {
		t.Fatal(err)
	}
	hosttest.GiveReceiptKey(t, h.Home)
	if !opts.NoFleet {
		section := FleetSection("clinics", f.Key.Public, opts.PreApprove)
		p := filepath.Join(h.Home, host.PolicyFile)
		old, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, append(old, section...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	opened, err := host.Open(ctx, h.Home)
	if err != nil {
		t.Fatal(err)
	}
	defer opened.Close()
	// One connection revision per entry: a name listed again is replaced.
	sb := pipeline.Connection{Name: "sandbox", Connector: resolve.SandboxConnector, Config: connector.Config{Command: connector.SandboxCommand}}
	conns := make([]pipeline.Connection, max(opts.ConnectionRevisions, 1))
	for i := range conns {
		conns[i] = sb
	}
	if err := pipeline.SetUpHost(ctx, opened, pipeline.HostOptions{By: Operator, Now: time.Now(), Connections: conns, Connector: connector.Options{SandboxDir: sandbox.Dir(h.Home)}}); err != nil {
		t.Fatal(err)
	}
	return h
}

// FleetSection is a host policy's fleet section trusting pub.
func FleetSection(name string, pub []byte, preApprove bool) string {
	return fmt.Sprintf("fleet: {\n\tname: %q\n\tkeys: ops: key: %s\n\tpre_approve: %v\n}\n", name, strconv.Quote(string(pub)), preApprove)
}

// Spec renders a fleet file for hosts, every host labelled site: north
// and one deployment "clinic" of release selecting them all.
func (f *Fleet) Spec(release string, hosts []string, ceiling string) string {
	return f.SpecIn(f.Repository, release, hosts, ceiling)
}

// SpecIn is Spec for the fleet repository repo (HOST/REPO).
func (f *Fleet) SpecIn(repo, release string, hosts []string, ceiling string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "package fleet\n\nname: \"clinics\"\nregistry: %q\nhosts: {\n", repo)
	for _, id := range hosts {
		fmt.Fprintf(&b, "\t%q: labels: {site: \"north\"}\n", id)
	}
	if ceiling == "" {
		ceiling = `{capabilities: ["*"], max_risk: "consequential"}`
	}
	fmt.Fprintf(&b, "}\ndeployments: clinic: {\n\trelease: %q\n\tselector: {site: \"north\"}\n\tmodel: \"demo-model\"\n\tceiling: %s\n}\n", release, ceiling)
	return b.String()
}

// WriteSpec writes src to a new file and returns its path.
func (f *Fleet) WriteSpec(src string) string {
	f.T.Helper()
	p := filepath.Join(f.T.TempDir(), "fleet.cue")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		f.T.Fatal(err)
	}
	return p
}

// LoadSpec writes and loads the fleet file Spec renders for hosts with
// the fleet's release and the default ceiling.
func (f *Fleet) LoadSpec(hosts ...string) *fleet.Spec {
	f.T.Helper()
	spec, err := fleet.LoadSpec(f.WriteSpec(f.Spec(f.Release, hosts, "")))
	if err != nil {
		f.T.Fatal(err)
	}
	return spec
}

// OtherKey makes a fleet key of another fleet (sealed with KeyPassword),
// for tests that need one the hosts do not trust.
func OtherKey(t testing.TB) pipeline.Keys {
	t.Helper()
	_, key, err := newFleetKey()
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// PushStatuses pushes, for each of hosts, the signed status its
// `oa provision` would push (bound, seen at lastSeen), signed by key with
// its public key beside it, 16 at a time: a fleet of thousands of hosts
// without running thousands of provisions. The document is the one
// fleet's reader expects: an image-spec manifest with the empty config
// and one layer, the status's canonical JSON, annotated with its
// signature, key id and public key.
func (f *Fleet) PushStatuses(hosts []string, key pipeline.Keys, lastSeen time.Time) {
	f.T.Helper()
	f.pushEach(hosts, func(ctx context.Context, target oci.Target, id string) error {
		return pushStatus(ctx, target, f.Repository, id, key, lastSeen)
	})
}

// pushEach runs push for each of hosts, 16 at a time, on the fleet's
// repository (the empty config pushed first).
func (f *Fleet) pushEach(hosts []string, push func(ctx context.Context, target oci.Target, id string) error) {
	f.T.Helper()
	ctx := context.Background()
	ref, err := oci.ParseRef(f.Repository, oci.RefOptions{})
	if err != nil {
		f.T.Fatal(err)
	}
	target, err := oci.Open(ctx, ref, oci.OpenOptions{})
	if err != nil {
		f.T.Fatal(err)
	}
	if _, err := oci.PushIfMissing(ctx, target, ocispec.DescriptorEmptyJSON, ocispec.DescriptorEmptyJSON.Data); err != nil {
		f.T.Fatal(err)
	}
	var (
		wg    sync.WaitGroup
		sem   = make(chan struct{}, 16)
		mu    sync.Mutex
		first error
	)
	for _, id := range hosts {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := push(ctx, target, id); err != nil {
				mu.Lock()
				first = cmp.Or(first, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if first != nil {
		f.T.Fatal(first)
	}
}

// pushStatus pushes one host's status document.
func pushStatus(ctx context.Context, target oci.Target, repo, id string, key pipeline.Keys, lastSeen time.Time) error {
	st := fleet.Status{Type: fleet.StatusType, Fleet: "clinics", Host: id, EnvelopeSeq: 1, Deployment: "clinic", State: fleet.Bound,
		Blocking: []blocking.Code{}, Versions: fleet.Versions{OA: "test", Protocol: "test"}, LastSeen: lastSeen.UTC()}
	return pushDoc(ctx, target, fleet.StatusArtifactType, fleet.StatusTag(id), st, key)
}

// pushDoc signs v's canonical JSON with key and pushes it under tag as
// fleet writes a document of artifactType.
func pushDoc(ctx context.Context, target oci.Target, artifactType, tag string, v any, key pipeline.Keys) error {
	payload, err := canonical.Marshal(v)
	if err != nil {
		return err
	}
	sig, err := key.Signer.SignBytes(payload)
	if err != nil {
		return err
	}
	layer := content.NewDescriptorFromBytes(artifactType+"+json", payload)
	layer.Data = payload // as fleet writes it: the document embedded in its manifest
	layer.Annotations = map[string]string{
		fleet.AnnotationSignature: base64.StdEncoding.EncodeToString(sig),
		fleet.AnnotationKeyID:     key.Signer.KeyID(),
		fleet.AnnotationPublicKey: string(key.Public),
	}
	if err := target.Push(ctx, layer, bytes.NewReader(payload)); err != nil && !errors.Is(err, errdef.ErrAlreadyExists) {
		return err
	}
	manifest, err := json.Marshal(ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest,
		ArtifactType: artifactType, Config: ocispec.DescriptorEmptyJSON, Layers: []ocispec.Descriptor{layer}})
	if err != nil {
		return err
	}
	_, err = oras.TagBytes(ctx, target, ocispec.MediaTypeImageManifest, manifest, tag)
	return err
}
