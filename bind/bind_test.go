package bind_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	_ "modernc.org/sqlite"

	"github.com/oa-dev/oa/admit"
	"github.com/oa-dev/oa/bind"
	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connection"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/connectortest"
	"github.com/oa-dev/oa/testkit/hosttest"
)

const model = "claude-test"

type fixture struct {
	*hosttest.Host
	host      *host.Host
	toolsFile string
}

var readSchema = json.RawMessage(`{"type":"object","properties":{"record":{"type":"string"}},"required":["record"]}`)

func serverTools(readDescription string) []connectortest.ToolSpec {
	return []connectortest.ToolSpec{
		{Name: "read_record", Description: readDescription, InputSchema: readSchema, Annotations: json.RawMessage(`{"readOnlyHint":true}`)},
		{Name: "append_note", Description: "Append a note.", Annotations: json.RawMessage(`{"readOnlyHint":false}`)},
	}
}

// newFixture is an admitted host whose records connector is a real MCP
// subprocess, with the plan bound to deployment "clinic".
func newFixture(t *testing.T) (*fixture, *bind.Binding) {
	t.Helper()
	f := &fixture{Host: hosttest.New(t, nil)}
	f.WriteRegistry(resolve.StarterRegistry(hosttest.Name))
	f.host = f.Open()
	f.toolsFile = filepath.Join(t.TempDir(), "tools.json")
	f.setTools(serverTools("Read a record."))
	f.AddConnection(f.host, "records", resolve.SandboxConnector, connector.Config{Command: connectortest.Server(t), Args: []string{"--tools", f.toolsFile}, Confinement: connectortest.Allow(filepath.Dir(f.toolsFile))})
	plan, err := f.Plan(f.host, model, true)
	if err != nil {
		t.Fatal(err)
	}
	b, err := bind.Bind(context.Background(), f.host, f.Ref, false, plan, bind.Approval{By: "Dr Ada", Approved: true, Now: f.Now})
	if err != nil {
		t.Fatal(err)
	}
	return f, b
}

func (f *fixture) setTools(tools []connectortest.ToolSpec) {
	f.T.Helper()
	if err := os.Rename(connectortest.WriteTools(f.T, f.T.TempDir(), tools), f.toolsFile); err != nil {
		f.T.Fatal(err)
	}
}

// inspect recomputes the live plan and compares it with the binding.
func (f *fixture) inspect(model string) *bind.Report {
	f.T.Helper()
	b, err := bind.Current(context.Background(), f.host, "clinic")
	if err != nil {
		f.T.Fatal(err)
	}
	plan, err := f.Plan(f.host, model, true)
	if err != nil && blocking.Refusals(err) == nil {
		f.T.Fatal(err)
	}
	return bind.Compare(b, plan, err)
}

func links(r *bind.Report) []bind.Link {
	var out []bind.Link
	for _, c := range r.Changes {
		out = append(out, c.Link)
	}
	return out
}

func TestBindRecordsTheApprovedPlan(t *testing.T) {
	f, b := newFixture(t)
	if b.Seq != 1 || b.PlanDigest != b.Plan.Digest() || b.Model != model || len(b.Approved) != 1 || b.Approved[0] != "records.note.append" || b.ApprovedBy != "Dr Ada" {
		t.Fatalf("binding = %+v", b)
	}
	if len(b.Connections) != 1 || b.Connections[0].ID != "records" || b.Connections[0].Revision != 1 {
		t.Fatalf("connection set = %+v", b.Connections)
	}
	got, err := bind.Current(context.Background(), f.host, "clinic")
	if err != nil || got.PlanDigest != b.PlanDigest {
		t.Fatalf("current = %+v, %v", got, err)
	}
	if r := f.inspect(model); !r.Approved || len(r.Changes) != 0 || r.Err() != nil {
		t.Fatalf("unchanged host: %+v", r)
	}
}

func TestBindRefusals(t *testing.T) {
	f, _ := newFixture(t)
	plan, err := f.Plan(f.host, model, false)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := bind.Bind(ctx, f.host, f.Ref, false, plan, bind.Approval{By: "Dr Ada", Now: f.Now}); !hosttest.HasCode(t, err, blocking.ConsequentialNotApproved) {
		t.Fatalf("unapproved consequential plan: %v", err)
	}
	bad := *plan
	bad.Deployment = "Clinic One"
	if _, err := bind.Bind(ctx, f.host, f.Ref, false, &bad, bind.Approval{By: "Dr Ada", Approved: true, Now: f.Now}); !hosttest.HasCode(t, err, blocking.DeploymentInvalid) {
		t.Fatalf("bad deployment name: %v", err)
	}
	if _, err := bind.Bind(ctx, f.host, f.Ref, false, plan, bind.Approval{Approved: true, Now: f.Now}); !hosttest.HasCode(t, err, blocking.PersonMissing) {
		t.Fatalf("no approver: %v", err)
	}
	if _, err := bind.Current(ctx, f.host, "elsewhere"); !hosttest.HasCode(t, err, blocking.BindingMissing) {
		t.Fatalf("missing binding: %v", err)
	}
	if b, _ := bind.Current(ctx, f.host, "clinic"); b.Seq != 1 {
		t.Fatalf("a refused bind wrote binding #%d", b.Seq)
	}
}

func TestTamperedBindingIsUnverifiable(t *testing.T) {
	f, _ := newFixture(t)
	db, err := sql.Open("sqlite", filepath.Join(f.Home, host.StateFile))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Approve the plan "by" someone else: drop the append-only trigger the
	// way an attacker with file access could, and edit the record.
	if _, err := db.Exec(`DROP TRIGGER versions_no_update`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE versions SET record = CAST(replace(CAST(record AS TEXT), 'Dr Ada', 'Dr Bob') AS BLOB) WHERE kind = 'binding'`); err != nil {
		t.Fatal(err)
	}
	if _, err := bind.Current(context.Background(), f.Open(), "clinic"); !hosttest.HasCode(t, err, blocking.BindingUnverifiable) {
		t.Fatalf("tampered binding: %v", err)
	}
}

// TestInspectNamesTheChangedLink: each change to what the plan depends on
// is reported as its own link.
func TestInspectNamesTheChangedLink(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		change func(f *fixture)
		model  string
		want   bind.Link
	}{
		{"connection revision bump", func(f *fixture) {
			cfg := connector.Config{Command: connectortest.Server(f.T), Args: []string{"--tools", f.toolsFile, "--hang-on-call=false"}, Confinement: connectortest.Allow(filepath.Dir(f.toolsFile))}
			f.AddConnection(f.host, "records", resolve.SandboxConnector, cfg)
		}, model, bind.LinkConnectionRevision},
		{"downstream tool schema change", func(f *fixture) {
			tools := serverTools("Read a record.")
			tools[0].InputSchema = json.RawMessage(`{"type":"object","properties":{"record":{"type":"string","maxLength":7}}}`)
			f.setTools(tools)
		}, model, bind.LinkToolInventory},
		{"registry edit, signed", func(f *fixture) {
			f.WriteRegistry(strings.Replace(resolve.StarterRegistry(hosttest.Name), "Read one record", "Read exactly one record", 1))
		}, model, bind.LinkRegistry},
		{"registry edit, unsigned", func(f *fixture) {
			os.WriteFile(filepath.Join(f.Home, resolve.RegistryFile), []byte(strings.Replace(resolve.StarterRegistry(hosttest.Name), "Read one record", "Read all records", 1)), 0o644)
		}, model, bind.LinkRegistry},
		{"revoked admission", func(f *fixture) {
			if _, err := admit.Revoke(ctx, f.host, f.Release.Descriptor.Digest.String(), "withdrawn", "Dr Ada", f.Now); err != nil {
				f.T.Fatal(err)
			}
		}, model, bind.LinkAdmission},
		{"model", func(*fixture) {}, "claude-other", bind.LinkModel},
		{"corrupted IR blob", corruptIR, model, bind.LinkArtifact},
		{"connection disabled", func(f *fixture) {
			if _, err := connection.SetEnabled(ctx, f.host, "records", false, f.Change()); err != nil {
				f.T.Fatal(err)
			}
		}, model, bind.LinkConnection},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // each case has its own host and servers
			f, _ := newFixture(t)
			c.change(f)
			r := f.inspect(c.model)
			if r.Approved || len(r.Changes) == 0 || links(r)[0] != c.want {
				t.Fatalf("links = %v, want first %s; report %+v", links(r), c.want, r)
			}
			if err := r.Err(); !hosttest.HasCode(t, err, blocking.PlanDigestMismatch) || !strings.Contains(err.Error(), string(c.want)) {
				t.Fatalf("Err = %v", err)
			}
		})
	}
}

// corruptIR changes one byte of the release's stored IR blob, keeping its
// size, at the bound reference and in the host's release store (when
// kept there): the release's artifact changed, not the capability
// registry.
func corruptIR(f *fixture) {
	raw, err := oci.FetchBlob(context.Background(), f.Release.Target, f.Release.Descriptor)
	if err != nil {
		f.T.Fatal(err)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		f.T.Fatal(err)
	}
	repo, _, _ := strings.Cut(f.Ref, "@")
	for _, dir := range []string{filepath.Join(f.Home, "oci", repo), filepath.Join(f.Home, bind.StoreDir)} {
		path := filepath.Join(dir, "blobs", "sha256", m.Layers[0].Digest.Encoded())
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) && dir != filepath.Join(f.Home, "oci", repo) {
			continue // not kept yet
		}
		if err != nil {
			f.T.Fatal(err)
		}
		b[len(b)/2] ^= 1
		_ = os.Chmod(path, 0o644)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			f.T.Fatal(err)
		}
	}
}
