// Package hosttest builds real hosts for tests: a host folder with keys,
// policy and SQLite store, an OCI image layout under it holding the clinic
// example pushed, signed by a publisher and attested by an independent
// authority (pipeline.Publish), and that release admitted. Nothing is
// mocked.
package hosttest

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/oa-dev/oa/admit"
	"github.com/oa-dev/oa/bind"
	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/compiler"
	"github.com/oa-dev/oa/connection"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/examples"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/pipeline"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/signing"
)

// Name is the host name of every test host.
const Name = "test-host"

// Host is a test host with one admitted release.
type Host struct {
	T    testing.TB
	Home string
	// Ref is the release's digest reference, "clinic-triage@sha256:…",
	// naming a layout under Home/oci as the oa CLI reads it: Release.Ref
	// as a person types it.
	Ref string
	// Release is the admitted release as the host stages read it
	// (admit.Admit, resolve.Compute, bind.Request).
	Release *oci.Release
	// Now is the time the release was admitted at.
	Now time.Time
	// PublisherPub and AuthorityPub are the public keys (PEM) the release
	// is signed and attested with, as an auditor would hold them.
	PublisherPub, AuthorityPub []byte
}

// New initializes a host in a new temporary folder and admits the clinic
// example (edited by edit, when not nil, before it is compiled).
func New(t testing.TB, edit func(bundleDir string)) *Host {
	t.Helper()
	ctx := context.Background()
	h := &Host{T: t, Home: t.TempDir(), Now: time.Now().UTC().Truncate(time.Second)}
	publisher, authority, err := sharedKeys()
	if err != nil {
		t.Fatal(err)
	}
	if err := host.Init(h.Home, host.InitOptions{Host: Name, Publishers: map[string][]byte{"publisher": publisher.Public}, Authorities: map[string][]byte{"authority": authority.Public}, HostKey: PoolKey(t)}); err != nil {
		t.Fatal(err)
	}
	GiveReceiptKey(t, h.Home)
	dir := filepath.Join(t.TempDir(), "bundle")
	if err := examples.Write(examples.Default, dir); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(dir)
	}
	var rel *pipeline.Published
	if edit == nil {
		rel, err = publishDefault(ctx, h.Home, dir, publisher.Signer, authority.Signer)
	} else {
		rel, err = pipeline.Publish(ctx, h.Home, dir, publisher.Signer, authority.Signer)
	}
	if err != nil {
		t.Fatal(err)
	}
	h.Ref, h.Release = rel.Ref.String(), &rel.Release
	h.PublisherPub, h.AuthorityPub = publisher.Public, authority.Public
	host := h.Open()
	if _, _, err := admit.Admit(ctx, host, h.Release, admit.AdmitOptions{AdmittedBy: "Test Operator", Now: h.Now}); err != nil {
		t.Fatal(err)
	}
	return h
}

// Shared fixtures of one test process: making a cosign key pair costs two
// scrypt rounds and compiling the example a CUE evaluation, and every test
// host would otherwise repeat them. Each host still has its own host key,
// store and layout; only the publisher and authority (which tests trust,
// never compare across hosts) and the unedited example's compiled IR are
// shared.
var (
	keysOnce             sync.Once
	publisher, authority pipeline.Keys
	keysErr              error

	compileOnce sync.Once
	compiled    *compiler.Result
	compileErr  error
)

func sharedKeys() (pipeline.Keys, pipeline.Keys, error) {
	keysOnce.Do(func() {
		if publisher, keysErr = pipeline.NewKeys(); keysErr == nil {
			authority, keysErr = pipeline.NewKeys()
		}
	})
	return publisher, authority, keysErr
}

// publishDefault is pipeline.Publish of the unedited example in dir,
// compiled once per process.
func publishDefault(ctx context.Context, home, dir string, pub, auth *signing.Signer) (*pipeline.Published, error) {
	compileOnce.Do(func() { compiled, compileErr = compiler.Compile(dir) })
	if compileErr != nil {
		return nil, compileErr
	}
	return pipeline.PublishCompiled(ctx, home, compiled, pub, auth)
}

// Open opens the host; it is closed when the test ends.
func (h *Host) Open() *host.Host {
	h.T.Helper()
	opened, err := host.Open(context.Background(), h.Home)
	if err != nil {
		h.T.Fatal(err)
	}
	h.T.Cleanup(func() { opened.Close() })
	return opened
}

// WriteRegistry writes src as the host's registry and signs it.
func (h *Host) WriteRegistry(src string) {
	h.T.Helper()
	if err := os.WriteFile(filepath.Join(h.Home, resolve.RegistryFile), []byte(src), 0o644); err != nil {
		h.T.Fatal(err)
	}
	reg, err := resolve.LoadRegistry(filepath.Join(h.Home, resolve.RegistryFile))
	if err != nil {
		h.T.Fatal(err)
	}
	if _, err := resolve.SignRegistry(context.Background(), h.Open(), reg, "Test Operator", h.Now); err != nil {
		h.T.Fatal(err)
	}
}

// Change is the change every test connection is made with.
func (h *Host) Change() connection.Change {
	return connection.Change{By: "Test Operator", Now: h.Now}
}

// AddConnection adds (or replaces) a connection and verifies it.
func (h *Host) AddConnection(hh *host.Host, name, connectorID string, cfg connector.Config) {
	h.T.Helper()
	ctx := context.Background()
	if _, err := connection.Add(ctx, hh, connection.AddOptions{Name: name, Connector: connectorID, Config: cfg, Replace: true}, h.Change()); err != nil {
		h.T.Fatal(err)
	}
	if _, err := connection.Verify(ctx, hh, name, connector.Options{}, h.Change()); err != nil {
		h.T.Fatal(err)
	}
}

// Sandbox is the configuration of a built-in sandbox connection.
var Sandbox = connector.Config{Command: connector.SandboxCommand}

// Plan computes the release's plan for deployment "clinic" and model.
func (h *Host) Plan(hh *host.Host, model string, probe bool) (*resolve.Plan, error) {
	plan, _, err := resolve.Compute(context.Background(), hh, h.Release, resolve.Request{Deployment: "clinic", Model: model}, resolve.ComputeOptions{Now: h.Now, Probe: probe})
	return plan, err
}

// Codes returns the codes of err's refusals, failing the test on a fault.
func Codes(t testing.TB, err error) []blocking.Code {
	t.Helper()
	if err == nil {
		return nil
	}
	l := blocking.Refusals(err)
	if l == nil {
		t.Fatalf("fault, not a refusal: %v", err)
	}
	out := make([]blocking.Code, len(l))
	for i, r := range l {
		out[i] = r.Code
	}
	return out
}

// HasCode reports whether err holds a refusal with code.
func HasCode(t testing.TB, err error, code blocking.Code) bool {
	t.Helper()
	return slices.Contains(Codes(t, err), code)
}

// Bind resolves the clinic plan for model (probing every connection) and
// binds it to deployment "clinic" with a person's approval.
func (h *Host) Bind(opened *host.Host, model string) *bind.Binding {
	h.T.Helper()
	rel := &pipeline.Published{Release: *h.Release}
	b, err := bind.ResolveAndBind(context.Background(), opened, rel.BindRequest("clinic", model, "Dr Ada", h.Now, connector.Options{}))
	if err != nil {
		h.T.Fatal(err)
	}
	return b
}

// SharedKeys are the publisher and authority keys every test host of this
// process trusts, made once per process.
func SharedKeys(t testing.TB) (publisher, authority pipeline.Keys) {
	t.Helper()
	p, a, err := sharedKeys()
	if err != nil {
		t.Fatal(err)
	}
	return p, a
}
