package admit

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	_ "modernc.org/sqlite"
	"oras.land/oras-go/v2/content/oci"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/compiler"
	"github.com/oa-dev/oa/examples"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/internal/canonical"
	ocipkg "github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/schemas"
	"github.com/oa-dev/oa/signing"
)

type keyPair struct {
	signer *signing.Signer
	pub    []byte
}

func newKey(t *testing.T) keyPair {
	t.Helper()
	priv, pub, err := signing.GenerateKeys(nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := signing.LoadSigner(priv, nil)
	if err != nil {
		t.Fatal(err)
	}
	return keyPair{s, pub}
}

// fixture is a host, a layout and the keys of one publisher and two
// authorities; release pushes, signs and attests a bundle version.
type fixture struct {
	t                    *testing.T
	home                 string
	store                *oci.Store
	publisher, auth, lab keyPair
}

// fixtureKeys are the publisher and two authorities every fixture of
// this test process trusts: a key pair costs two scrypt rounds, and the
// tests need them distinct from each other and from newKey's strangers,
// not new per fixture.
var (
	fixtureKeysOnce   sync.Once
	fixtureKeys       [3]keyPair
	compiledMu        sync.Mutex
	compiledByVersion = map[string]*compiler.Result{}
)

func newFixture(t *testing.T, edit func(policy string) string) *fixture {
	t.Helper()
	fixtureKeysOnce.Do(func() {
		for i := range fixtureKeys {
			fixtureKeys[i] = newKey(t)
		}
	})
	f := &fixture{t: t, home: t.TempDir(), publisher: fixtureKeys[0], auth: fixtureKeys[1], lab: fixtureKeys[2]}
	store, err := oci.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f.store = store
	if err := host.Init(f.home, host.InitOptions{Host: "test-host", Publishers: map[string][]byte{"acme": f.publisher.pub}, Authorities: map[string][]byte{"auth": f.auth.pub, "lab": f.lab.pub}}); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		p := filepath.Join(f.home, host.PolicyFile)
		b, _ := os.ReadFile(p)
		if err := os.WriteFile(p, []byte(edit(string(b))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func (f *fixture) host() *host.Host {
	f.t.Helper()
	h, err := host.Open(context.Background(), f.home)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { h.Close() })
	return h
}

// release pushes the clinic example at version, signed by signer and
// attested by each of attesters.
func (f *fixture) release(version string, signer *signing.Signer, attesters ...*signing.Signer) ocispec.Descriptor {
	f.t.Helper()
	res := compileVersion(f.t, version)
	ctx := context.Background()
	desc, err := ocipkg.Push(ctx, f.store, res.Worker, res.IR, version, ocipkg.PackOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	if signer != nil {
		if _, err := signing.Sign(ctx, f.store, desc, signing.WriteOptions{Signer: signer, Repository: "oa.local/clinic"}); err != nil {
			f.t.Fatal(err)
		}
	}
	art, err := ocipkg.Fetch(ctx, f.store, desc, schemas.CheckFetchedIR)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, a := range attesters {
		pred, _ := canonical.Marshal(signing.Conformance(art, a.KeyID()))
		if _, err := signing.Attest(ctx, f.store, desc, signing.ConformancePredicateType, pred, signing.WriteOptions{Signer: a, Repository: "oa.local/clinic"}); err != nil {
			f.t.Fatal(err)
		}
	}
	return desc
}

// compileVersion compiles the clinic example at version, once per test
// process (compiling is deterministic).
func compileVersion(t *testing.T, version string) *compiler.Result {
	t.Helper()
	compiledMu.Lock()
	defer compiledMu.Unlock()
	if res, ok := compiledByVersion[version]; ok {
		return res
	}
	dir := filepath.Join(t.TempDir(), "b")
	if err := examples.Write(examples.Default, dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "version.cue"), []byte("package worker\nversion: \""+version+"\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "worker.cue"))
	os.WriteFile(filepath.Join(dir, "worker.cue"), []byte(strings.Replace(string(b), `version:  "1.2.0"`, "", 1)), 0o644)
	res, err := compiler.Compile(dir)
	if err != nil {
		t.Fatal(err)
	}
	compiledByVersion[version] = res
	return res
}

var now = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

// pinned is the release desc names in the fixture's layout, as Admit
// reads it.
func (f *fixture) pinned(desc ocispec.Descriptor) *ocipkg.Release {
	return &ocipkg.Release{Target: f.store, Descriptor: desc}
}

func (f *fixture) admit(h *host.Host, desc ocispec.Descriptor, profile string) (*Decision, *Record, error) {
	return Admit(context.Background(), h, f.pinned(desc), AdmitOptions{Profile: profile, AdmittedBy: "Dr Ada", Now: now})
}

func code(err error) blocking.Code {
	if l := blocking.Refusals(err); l != nil {
		return l[0].Code
	}
	return ""
}

func TestAdmitWritesASignedRecordAndStatusIsActive(t *testing.T) {
	f := newFixture(t, nil)
	h := f.host()
	desc := f.release("1.2.0", f.publisher.signer, f.auth.signer)
	if d, rec, err := Admit(context.Background(), h, f.pinned(desc), AdmitOptions{AdmittedBy: "Dr Ada", Now: now, DryRun: true}); err != nil || rec != nil || len(d.Checks) != 9 {
		t.Fatalf("dry run: %v %v %d checks", err, rec, len(d.Checks))
	}
	if list, _ := Admissions(context.Background(), h, ""); len(list) != 0 {
		t.Fatal("a dry run wrote a record")
	}
	_, rec, err := f.admit(h, desc, "")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Seq != 1 || rec.ArtifactDigest != desc.Digest.String() || rec.Publisher.Name != "acme" || rec.PolicyDigest != h.Policy.Digest() ||
		rec.AdmittedBy != "Dr Ada" || rec.OSAccount == "" || rec.Profile != "standard" || !rec.ExpiresAt.Equal(now.Add(720*time.Hour)) || len(rec.Authorities) != 1 || rec.Authorities[0].Name != "auth" {
		t.Fatalf("record: %+v", rec)
	}
	st, err := StatusOf(context.Background(), h, desc.Digest.String(), now)
	if err != nil || st.State != Active {
		t.Fatalf("status: %+v %v", st, err)
	}
	// Expiry at the boundary.
	if st, _ := StatusOf(context.Background(), h, desc.Digest.String(), rec.ExpiresAt.Add(-time.Second)); st.State != Active {
		t.Fatalf("a second before expiry: %s", st.State)
	}
	if st, _ := StatusOf(context.Background(), h, desc.Digest.String(), rec.ExpiresAt); st.State != Expired {
		t.Fatalf("at expiry: %s", st.State)
	}
	if st, _ := StatusOf(context.Background(), h, "sha256:"+strings.Repeat("2", 64), now); st.State != Missing {
		t.Fatalf("unknown digest: %s", st.State)
	}
}

func TestAdmissionRefusals(t *testing.T) {
	past := "not_after: \"2020-01-01T00:00:00Z\""
	cases := []struct {
		name    string
		policy  func(string) string
		release func(f *fixture) ocispec.Descriptor
		profile string
		want    blocking.Code
	}{
		{"no signature", nil, func(f *fixture) ocispec.Descriptor { return f.release("1.0.0", nil, f.auth.signer) }, "", blocking.SignatureMissing},
		{"untrusted publisher", nil, func(f *fixture) ocispec.Descriptor { return f.release("1.0.0", newKey(f.t).signer, f.auth.signer) }, "", blocking.SignatureUntrusted},
		{"publisher key expired", func(p string) string { return strings.Replace(p, "acme: key:", "acme: "+past+"\n\tacme: key:", 1) },
			func(f *fixture) ocispec.Descriptor { return f.release("1.0.0", f.publisher.signer, f.auth.signer) }, "", blocking.PublisherKeyOutsideWindow},
		{"no attestation", nil, func(f *fixture) ocispec.Descriptor { return f.release("1.0.0", f.publisher.signer) }, "", blocking.AttestationMissing},
		{"attested by the publisher", nil, func(f *fixture) ocispec.Descriptor { return f.release("1.0.0", f.publisher.signer, f.publisher.signer) }, "", blocking.AttestationByPublisher},
		{"untrusted authority", nil, func(f *fixture) ocispec.Descriptor { return f.release("1.0.0", f.publisher.signer, newKey(f.t).signer) }, "", blocking.AttestationUntrusted},
		{"authority key expired", func(p string) string {
			return strings.Replace(strings.Replace(p, "auth: key:", "auth: "+past+"\n\tauth: key:", 1), "lab: key:", "lab: "+past+"\n\tlab: key:", 1)
		}, func(f *fixture) ocispec.Descriptor { return f.release("1.0.0", f.publisher.signer, f.auth.signer) }, "", blocking.AuthorityKeyOutsideWindow},
		{"too few attestations", nil, func(f *fixture) ocispec.Descriptor { return f.release("1.0.0", f.publisher.signer, f.auth.signer) }, "regulated", blocking.AttestationsInsufficient},
		{"feature not offered", func(p string) string { return strings.Replace(p, `"approvals.person"`, `"other.feature"`, 1) },
			func(f *fixture) ocispec.Descriptor { return f.release("1.0.0", f.publisher.signer, f.auth.signer) }, "", blocking.FeatureNotOffered},
		{"evaluator authority", func(p string) string {
			return strings.Replace(p, `"oa.dev/evaluators/cue@v1"`, `"example.org/eval@v1"`, 1)
		},
			func(f *fixture) ocispec.Descriptor { return f.release("1.0.0", f.publisher.signer, f.auth.signer) }, "", blocking.EvaluatorAuthorityUntrusted},
		{"impure for this host", func(p string) string { return strings.Replace(p, `"strings", `, "", 1) },
			func(f *fixture) ocispec.Descriptor { return f.release("1.0.0", f.publisher.signer, f.auth.signer) }, "", blocking.ComponentNotPure},
		{"outside host ceiling", func(p string) string {
			return strings.Replace(p, `capabilities: ["*"]`, `capabilities: ["invoices.*"]`, 1)
		},
			func(f *fixture) ocispec.Descriptor { return f.release("1.0.0", f.publisher.signer, f.auth.signer) }, "", blocking.CapabilityOutsideHost},
		{"consequential on a read-only host", func(p string) string {
			return strings.Replace(p, `max_risk:     "consequential"`, `max_risk: "read_only"`, 1)
		},
			func(f *fixture) ocispec.Descriptor { return f.release("1.0.0", f.publisher.signer, f.auth.signer) }, "", blocking.CapabilityOutsideHost},
		{"unknown profile", nil, func(f *fixture) ocispec.Descriptor { return f.release("1.0.0", f.publisher.signer, f.auth.signer) }, "lenient", blocking.ProfileUnknown},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // each case has its own host and layout
			f := newFixture(t, c.policy)
			h := f.host()
			_, rec, err := f.admit(h, c.release(f), c.profile)
			if code(err) != c.want || rec != nil {
				t.Fatalf("Admit = %v (record %v), want %s", err, rec, c.want)
			}
			if list, _ := Admissions(context.Background(), h, ""); len(list) != 0 {
				t.Fatal("a refused admission wrote a record")
			}
		})
	}
}

// TestRollbackAndRevocation: versions of a package are admitted side by
// side (the older stays active after the newer is admitted); admitting
// the older again is a rollback, refused without --rollback; revoking
// one version leaves the other as it was, and a revoked digest is never
// admitted again.
func TestRollbackAndRevocation(t *testing.T) {
	f := newFixture(t, nil)
	h := f.host()
	old := f.release("1.0.0", f.publisher.signer, f.auth.signer)
	newer := f.release("1.1.0", f.publisher.signer, f.auth.signer)
	ctx := context.Background()
	for _, d := range []ocispec.Descriptor{old, newer} {
		if _, _, err := f.admit(h, d, ""); err != nil {
			t.Fatal(err)
		}
	}
	if st, _ := StatusOf(ctx, h, old.Digest.String(), now); st.State != Active || st.Record.Seq != 1 {
		t.Fatalf("the older release after a newer admission: %+v", st)
	}
	if _, _, err := f.admit(h, old, ""); code(err) != blocking.AdmissionRollback || !strings.Contains(err.Error(), "--rollback") {
		t.Fatalf("re-admitting the older release: %v", err)
	}
	if _, err := Revoke(ctx, h, newer.Digest.String(), "broken", "Dr Ada", now); err != nil {
		t.Fatal(err)
	}
	if st, _ := StatusOf(ctx, h, newer.Digest.String(), now); st.State != Revoked {
		t.Fatalf("revoked release: %s", st.State)
	}
	if st, _ := StatusOf(ctx, h, old.Digest.String(), now); st.State != Active || st.Record.Seq != 1 {
		t.Fatalf("revoking the newer release changed the older one's admission: %+v", st)
	}
	if _, _, err := f.admit(h, newer, ""); code(err) != blocking.ReleaseRevoked {
		t.Fatalf("re-admitting a revoked release: %v", err)
	}
	// RequireActive refuses each of these with the status's own reason.
	if _, err := RequireActive(ctx, h, newer.Digest.String(), now); code(err) != blocking.ReleaseRevoked {
		t.Fatalf("RequireActive of a revoked release: %v", err)
	}
	if _, err := RequireActive(ctx, h, "sha256:"+strings.Repeat("0", 64), now); code(err) != blocking.AdmissionMissing {
		t.Fatalf("RequireActive of a release never admitted: %v", err)
	}
}

func TestTamperedRowReadsUnverifiable(t *testing.T) {
	f := newFixture(t, nil)
	h := f.host()
	desc := f.release("1.2.0", f.publisher.signer, f.auth.signer)
	if _, _, err := f.admit(h, desc, ""); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", filepath.Join(f.home, host.StateFile))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// The store's triggers refuse updates; an attacker with the file drops them.
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'trigger'`)
	if err != nil {
		t.Fatal(err)
	}
	var triggers []string
	for rows.Next() {
		var n string
		rows.Scan(&n)
		triggers = append(triggers, n)
	}
	rows.Close()
	for _, n := range triggers {
		if _, err := db.Exec(`DROP TRIGGER "` + n + `"`); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec(`UPDATE admissions SET record = CAST(replace(CAST(record AS TEXT), '"standard"', '"demo"') AS BLOB)`); err != nil {
		t.Fatal(err)
	}
	st, err := StatusOf(context.Background(), h, desc.Digest.String(), now)
	if err != nil || st.State != Unverifiable {
		t.Fatalf("status after tampering: %+v %v", st, err)
	}
	list, _ := Admissions(context.Background(), h, "")
	if len(list) != 1 || list[0].Verified {
		t.Fatalf("list after tampering: %+v", list)
	}
}

func TestPolicyChangeMismatches(t *testing.T) {
	f := newFixture(t, nil)
	desc := f.release("1.2.0", f.publisher.signer, f.auth.signer)
	if _, _, err := f.admit(f.host(), desc, ""); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(f.home, host.PolicyFile)
	b, _ := os.ReadFile(p)
	os.WriteFile(p, []byte(strings.Replace(string(b), `"24h"`, `"12h"`, 1)), 0o644)
	if st, _ := StatusOf(context.Background(), f.host(), desc.Digest.String(), now); st.State != Mismatched {
		t.Fatalf("after a policy change: %s", st.State)
	}
}

func TestConcurrentAdmissionsGetDistinctSequenceNumbers(t *testing.T) {
	f := newFixture(t, nil)
	descs := []ocispec.Descriptor{f.release("2.0.0", f.publisher.signer, f.auth.signer), f.release("2.0.1", f.publisher.signer, f.auth.signer)}
	var wg sync.WaitGroup
	seqs := make([]int64, 2)
	errs := make([]error, 2)
	for i := range descs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h, err := host.Open(context.Background(), f.home)
			if err != nil {
				errs[i] = err
				return
			}
			defer h.Close()
			_, rec, err := f.admit(h, descs[i], "")
			if err != nil {
				errs[i] = err
				return
			}
			seqs[i] = rec.Seq
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil { // two releases never admitted before: neither goes back
			t.Fatal(err)
		}
	}
	if seqs[0] == seqs[1] {
		t.Fatalf("both admissions got seq %d", seqs[0])
	}
}

// TestHostChecksOnTheIR covers the checks a policy file cannot reach
// through the schema alone (it only lets a host speak oa.worker/v1).
func TestHostChecksOnTheIR(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "b")
	if err := examples.Write(examples.Default, dir); err != nil {
		t.Fatal(err)
	}
	res, err := compiler.Compile(dir)
	if err != nil {
		t.Fatal(err)
	}
	p := &host.Policy{Protocols: []string{"oa.worker/v2"}}
	if code(checkProtocol(res.Worker, p)) != blocking.ProtocolNotSpoken {
		t.Fatal("a protocol the host does not speak was accepted")
	}
	p.Protocols = []string{"oa.worker/v1"}
	if err := checkProtocol(res.Worker, p); err != nil {
		t.Fatal(err)
	}
}
