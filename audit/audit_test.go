package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	orasoci "oras.land/oras-go/v2/content/oci"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/internal/canonical"
	"github.com/oa-dev/oa/internal/store"
	"github.com/oa-dev/oa/ledger"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/pipeline"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/signing"
	"github.com/oa-dev/oa/testkit/hosttest"
	"github.com/oa-dev/oa/testkit/interoptest"
)

// fixture is a bound clinic host on the sandbox connector with real runs
// and receipts, exported once.
type fixture struct {
	*hosttest.Host
	keys   Keys
	bundle string
}

// newFixture binds the clinic deployment, runs it (a done run, an
// offline run retried once, a duplicate) and exports the bundle.
func newFixture(t testing.TB) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{Host: hosttest.New(t, nil)}
	f.WriteRegistry(resolve.StarterRegistry(hosttest.Name))
	opened := f.Open()
	f.AddConnection(opened, "sandbox", resolve.SandboxConnector, hosttest.Sandbox)
	f.Bind(opened, "claude-test")
	c, err := coordinator.Open(ctx, coordinator.Options{Home: f.Home, Deployment: "clinic", EffectTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range []struct{ request, record string }{{"a", "AB-1234"}, {"b", "OF-0001"}, {"b", "OF-0001"}, {"c", "DU-0001"}} {
		in := json.RawMessage(`{"record_ref":"` + run.record + `","urgency":"soon","summary":"Persistent cough, three days."}`)
		if _, err := c.Run(ctx, coordinator.RunRequest{Workflow: "append_triage_note", Inputs: in, RequestID: run.request, Wait: 30 * time.Second}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	hostPub, err := os.ReadFile(filepath.Join(f.Home, host.HostPubFile))
	if err != nil {
		t.Fatal(err)
	}
	f.keys = Keys{Publisher: f.PublisherPub, Authority: f.AuthorityPub, Host: hostPub}
	f.bundle = filepath.Join(t.TempDir(), "clinic.audit.tar")
	out, err := os.Create(f.bundle)
	if err != nil {
		t.Fatal(err)
	}
	var steps []string
	progress := func(format string, args ...any) { steps = append(steps, fmt.Sprintf(format, args...)) }
	sum, err := Export(ctx, ExportOptions{Home: f.Home, Now: time.Now(), Progress: progress}, out)
	if err != nil {
		t.Fatal(err)
	}
	// Progress names each step, with the runs and receipts read.
	if len(steps) != 4 || !strings.HasPrefix(steps[0], "copying the bound release sha256:") || steps[2] != "read 3 runs and 4 receipts; packing the bundle" || steps[3] != "writing the bundle" {
		t.Fatalf("export progress: %q", steps)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	if sum.Deployment != "clinic" || sum.Receipts != 4 || sum.Runs != 3 {
		t.Fatalf("export summary: %+v", sum)
	}
	return f
}

var chainLinks = []string{LinkBundle, signing.LinkArtifact, signing.LinkIR, signing.LinkSignature, signing.LinkAttestation, LinkAdmission,
	LinkRegistry, LinkConnections, LinkProjection, LinkPlan, LinkBinding, LinkReceipts, LinkLog, LinkTeach, LinkDecisions}

func linkNames(r *Report) []string {
	out := make([]string, len(r.Links))
	for i, l := range r.Links {
		out[i] = l.Name
	}
	return out
}

func verify(t *testing.T, path string, keys Keys) *Report {
	t.Helper()
	r, err := Verify(context.Background(), path, keys)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// wantBroken asserts the report's first broken link and its code.
func wantBroken(t *testing.T, r *Report, link string, code blocking.Code) {
	t.Helper()
	if r.OK || r.FirstBroken != link || !hosttest.HasCode(t, r.Err(), code) {
		t.Fatalf("first broken = %q (%v), want %s with %s; links %+v", r.FirstBroken, r.Err(), link, code, r.Links)
	}
}

func TestAuditVerifiesAfterTheHostFolderIsDeleted(t *testing.T) {
	f := newFixture(t)
	if err := os.RemoveAll(f.Home); err != nil {
		t.Fatal(err)
	}
	t.Setenv("OA_HOME", filepath.Join(t.TempDir(), "nothing-here"))
	r := verify(t, f.bundle, f.keys)
	if !r.OK || r.Err() != nil || !slices.Equal(linkNames(r), chainLinks) {
		t.Fatalf("report: %+v", r)
	}
	if r.Receipts == nil || r.Receipts.Receipts != 4 || r.Receipts.Runs != 3 || r.Receipts.Checkpoint == nil || r.Receipts.Checkpoint.Seq != 4 || r.Deployment != "clinic" {
		t.Fatalf("receipts: %+v", r.Receipts)
	}
	// An auditor's stock tool reads the bundle as it is: oras fetches the
	// audit manifest and a document from the tar.
	oras := interoptest.Tool(t, "oras")
	out, err := exec.Command(oras, "manifest", "fetch", "--oci-layout", f.bundle+":"+AuditTag).Output()
	if err != nil {
		t.Fatalf("oras manifest fetch: %v", err)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(out, &m); err != nil || m.ArtifactType != ArtifactType || m.Subject == nil || m.Subject.Digest.String() != r.ArtifactDigest {
		t.Fatalf("oras read the audit manifest as %s (%v)", out, err)
	}
	fetched := 0
	for _, l := range m.Layers {
		if l.Annotations[ocispec.AnnotationTitle] != DocReceipts {
			continue
		}
		fetched++
		blob, err := exec.Command(oras, "blob", "fetch", "--oci-layout", f.bundle+"@"+l.Digest.String(), "--output", "-").Output()
		var rs []ledger.ReceiptRow
		if err != nil || canonical.DecodeStrict(blob, &rs) != nil || len(rs) != 4 {
			t.Fatalf("oras blob fetch of %s: %v", DocReceipts, err)
		}
	}
	if fetched != 1 {
		t.Fatalf("the audit manifest lists %s %d times", DocReceipts, fetched)
	}
}

// rewrite writes a copy of the bundle at src whose documents edit
// changed, with every digest recomputed (as a careful forger would).
func rewrite(t *testing.T, src string, edit func(docs map[string][]byte)) string {
	t.Helper()
	ctx := context.Background()
	b := openWhole(t, src)
	edit(b.docs)
	dir := t.TempDir()
	layout, err := orasoci.NewWithContext(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := oci.Copy(ctx, b.release.Target, layout, b.release.Descriptor, ReleaseTag); err != nil {
		t.Fatal(err)
	}
	if _, err := packAudit(ctx, layout, b.release.Descriptor, &collected{bytes: b.docs}, time.Now()); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "edited.tar")
	var buf bytes.Buffer
	if err := writeTar(&buf, dir, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

// openWhole opens the bundle at path with every document in memory, the
// streamed ones (runs, receipts) read whole too, for tests that edit
// them.
func openWhole(t *testing.T, path string) *bundle {
	t.Helper()
	ctx := context.Background()
	b, err := openBundle(ctx, path, t.TempDir(), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for name, desc := range b.streamed {
		if b.docs[name], err = oci.FetchBlob(ctx, b.docTarget, desc); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// editDoc decodes document name into a value of type T, edits it and
// writes it back canonical.
func editDoc[T any](t *testing.T, docs map[string][]byte, name string, edit func(*T)) {
	t.Helper()
	var v T
	if err := canonical.DecodeStrict(docs[name], &v); err != nil {
		t.Fatal(err)
	}
	edit(&v)
	b, err := canonical.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	docs[name] = b
}

func replaceIn(t *testing.T, b []byte, old, new string) []byte {
	t.Helper()
	if !bytes.Contains(b, []byte(old)) {
		t.Fatalf("%q not found", old)
	}
	return bytes.Replace(b, []byte(old), []byte(new), 1)
}

func TestAuditNamesEachTamperedLink(t *testing.T) {
	f := newFixture(t)
	if r := verify(t, f.bundle, f.keys); !r.OK || r.Host == "" {
		t.Fatalf("untouched bundle: %+v", r)
	}
	receipts := func(edit func(*[]ledger.ReceiptRow)) func(map[string][]byte) {
		return func(d map[string][]byte) { editDoc(t, d, DocReceipts, edit) }
	}
	checkpoints := func(edit func(*[]store.Version)) func(map[string][]byte) {
		return func(d map[string][]byte) { editDoc(t, d, DocCheckpoints, edit) }
	}
	both := func(a, b func(map[string][]byte)) func(map[string][]byte) {
		return func(d map[string][]byte) { a(d); b(d) }
	}
	dropLast := func(rs *[]ledger.ReceiptRow) { *rs = (*rs)[:len(*rs)-1] }
	dropLastCP := func(vs *[]store.Version) { *vs = (*vs)[:len(*vs)-1] }
	cases := []struct {
		name string
		edit func(map[string][]byte)
		link string
		code blocking.Code
	}{
		{"receipt edited", receipts(func(rs *[]ledger.ReceiptRow) {
			(*rs)[0].Record = replaceIn(t, (*rs)[0].Record, `"reason":"verified"`, `"reason":"rejected"`)
		}), LinkReceipts, blocking.ReceiptChainBroken},
		{"last receipt deleted", receipts(dropLast), LinkReceipts, blocking.ReceiptCheckpointMismatch},
		{"last receipt and its checkpoint deleted", both(receipts(dropLast), checkpoints(dropLastCP)), LinkReceipts, blocking.ReceiptCheckpointMismatch},
		{"chain truncated to nothing", func(d map[string][]byte) {
			d[DocReceipts], d[DocCheckpoints], d[DocRuns] = []byte("[]"), []byte("[]"), []byte("[]")
		}, LinkReceipts, blocking.ReceiptCheckpointMismatch},
		{"receipts reordered", receipts(func(rs *[]ledger.ReceiptRow) {
			a, b := (*rs)[0], (*rs)[1]
			a.Record, a.Signature, a.RunID, a.Attempt, a.PrevDigest, b.Record, b.Signature, b.RunID, b.Attempt, b.PrevDigest = b.Record, b.Signature, b.RunID, b.Attempt, b.PrevDigest, a.Record, a.Signature, a.RunID, a.Attempt, a.PrevDigest
			(*rs)[0], (*rs)[1] = a, b
		}), LinkReceipts, blocking.ReceiptChainBroken},
		{"receipt list out of order", receipts(func(rs *[]ledger.ReceiptRow) { (*rs)[0], (*rs)[1] = (*rs)[1], (*rs)[0] }), LinkBundle, blocking.ReceiptChainBroken},
		{"run deleted", func(d map[string][]byte) {
			editDoc(t, d, DocRuns, func(rs *[]ledger.RunRow) { *rs = (*rs)[1:] })
		}, LinkReceipts, blocking.ReceiptRunsDisagree},
		{"run names another receipt", func(d map[string][]byte) {
			editDoc(t, d, DocRuns, func(rs *[]ledger.RunRow) {
				var state map[string]any
				if err := json.Unmarshal((*rs)[0].State, &state); err != nil {
					t.Fatal(err)
				}
				state["outcome"], state["reason"] = "did_not_run", "app_offline"
				(*rs)[0].State, _ = json.Marshal(state)
			})
		}, LinkReceipts, blocking.ReceiptRunsDisagree},
		{"projection edited", func(d map[string][]byte) {
			editDoc(t, d, DocProjection, func(m *map[string]any) { (*m)["personaDigest"] = "sha256:" + string(bytes.Repeat([]byte("0"), 64)) })
		}, LinkProjection, blocking.AuditProjectionMismatch},
		{"connection edited", func(d map[string][]byte) {
			editDoc(t, d, DocConnections, func(vs *[]store.Version) {
				(*vs)[len(*vs)-1].Record = replaceIn(t, (*vs)[len(*vs)-1].Record, `"Test Operator"`, `"Someone Else"`)
			})
		}, LinkConnections, blocking.AuditHostRecordUnverified},
		{"registry file edited", func(d map[string][]byte) {
			d[DocRegistry] = replaceIn(t, d[DocRegistry], `"Append one note to a record."`, `"Append any note anywhere."`)
		}, LinkRegistry, blocking.RegistrySignatureBroken},
		{"policy edited", func(d map[string][]byte) {
			d[DocPolicy] = replaceIn(t, d[DocPolicy], `default_profile: "standard"`, `default_profile: "demo"`)
		}, LinkAdmission, blocking.AdmissionMismatched},
		{"binding edited", func(d map[string][]byte) {
			editDoc(t, d, DocBindings, func(vs *[]store.Version) {
				(*vs)[len(*vs)-1].Record = replaceIn(t, (*vs)[len(*vs)-1].Record, `"Dr Ada"`, `"Dr Eve"`)
			})
		}, LinkPlan, blocking.BindingUnverifiable},
		{"host name edited (D11)", func(d map[string][]byte) {
			editDoc(t, d, DocHost, func(m *map[string]any) { (*m)["host"] = "evil-host" })
		}, LinkBinding, blocking.AuditHostUnverified},
		{"plan document edited", func(d map[string][]byte) {
			editDoc(t, d, DocPlan, func(p *map[string]any) { (*p)["model"] = "another-model" })
		}, LinkPlan, blocking.AuditPlanMismatch},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := verify(t, rewrite(t, f.bundle, c.edit), f.keys)
			wantBroken(t, r, c.link, c.code)
			if r.Host == "evil-host" {
				t.Fatal("an unverified host name is reported")
			}
		})
	}
	t.Run("wrong publisher key", func(t *testing.T) {
		other, err := pipeline.NewKeys()
		if err != nil {
			t.Fatal(err)
		}
		keys := f.keys
		keys.Publisher = other.Public
		wantBroken(t, verify(t, f.bundle, keys), signing.LinkSignature, blocking.SignatureUntrusted)
	})
	t.Run("another host's key", func(t *testing.T) {
		other, err := pipeline.NewKeys()
		if err != nil {
			t.Fatal(err)
		}
		keys := f.keys
		keys.Host = other.Public
		wantBroken(t, verify(t, f.bundle, keys), LinkAdmission, blocking.AdmissionUnverified)
	})
	t.Run("truncated file", func(t *testing.T) {
		b, err := os.ReadFile(f.bundle)
		if err != nil {
			t.Fatal(err)
		}
		cut := filepath.Join(t.TempDir(), "cut.tar")
		if err := os.WriteFile(cut, b[:len(b)/2], 0o644); err != nil {
			t.Fatal(err)
		}
		wantBroken(t, verify(t, cut, f.keys), LinkBundle, blocking.AuditBundleInvalid)
	})
}

func TestAuditRefusesReceiptsSwappedFromAnotherHost(t *testing.T) {
	a, b := newFixture(t), newFixture(t)
	other := openWhole(t, b.bundle)
	swapped := rewrite(t, a.bundle, func(d map[string][]byte) {
		for _, name := range []string{DocReceipts, DocCheckpoints, DocCheckpointFile, DocRuns} {
			d[name] = other.docs[name]
		}
	})
	wantBroken(t, verify(t, swapped, a.keys), LinkReceipts, blocking.ReceiptCheckpointMismatch)
}

// TestAuditStreamedDocumentsMustBeCanonical: the runs and receipts
// documents are read a row at a time, and believed only when the rows
// rebuild the document's exact canonical bytes: a document with a space
// between rows (its layer digest recomputed to match) or with a row
// that is not an object of the row type is the bundle's refusal.
func TestAuditStreamedDocumentsMustBeCanonical(t *testing.T) {
	f := newFixture(t)
	for name, edit := range map[string]func([]byte) []byte{
		"space between rows":    func(b []byte) []byte { return replaceIn(t, b, "},{", "}, {") },
		"a row of another type": func(b []byte) []byte { return replaceIn(t, b, "[{", `["x",{`) },
		"not a list":            func(b []byte) []byte { return []byte(`{"runs":[]}`) },
	} {
		t.Run(name, func(t *testing.T) {
			edited := rewrite(t, f.bundle, func(d map[string][]byte) { d[DocRuns] = edit(d[DocRuns]) })
			wantBroken(t, verify(t, edited, f.keys), LinkBundle, blocking.AuditBundleInvalid)
		})
	}
}
