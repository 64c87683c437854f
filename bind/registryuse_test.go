package bind_test

import (
	"context"
	"strings"
	"testing"

	"github.com/oa-dev/oa/bind"
	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// withOther is the starter registry with otherDeployment's entries added.
func withOther() string {
	s := resolve.StarterRegistry(hosttest.Name)
	s = strings.Replace(s, "capabilities: {\n", "capabilities: {\n\t\"memory.notes.read\": {risk: \"read_only\", description: \"Read the notes.\"}\n", 1)
	s = strings.Replace(s, "connectors: {\n", "connectors: {\n\t\"memory.server\": {availability: \"available\"}\n", 1)
	return strings.Replace(s, "tools: [\n", "tools: [\n\t{name: \"read_graph\", connector: \"memory.server\", capability: \"memory.notes.read\", risk: \"read_only\", enabled: true},\n", 1)
}

// TestRegistryChangeTouchesOnlyThePlansThatUseIt (issue 39): a plan
// covers the registry entries it uses, so mapping another deployment's
// capability, connector and tool leaves the binding approved, while an
// edit of an entry it uses (the capability, a tool of its connector, the
// connector) stales it and oa bind inspect names that entry.
func TestRegistryChangeTouchesOnlyThePlansThatUseIt(t *testing.T) {
	f, b := newFixture(t)
	if b.Plan.Type != resolve.PlanType || b.Plan.RegistryDigest != "" || len(b.Plan.RegistryEntries) == 0 {
		t.Fatalf("a new plan's registry link: %s %q %v", b.Plan.Type, b.Plan.RegistryDigest, b.Plan.RegistryEntries)
	}
	inspect := func() *bind.Report {
		t.Helper()
		r, err := bind.Inspect(context.Background(), f.host, b, bind.InspectOptions{Now: f.Now})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	f.WriteRegistry(withOther())
	if r := inspect(); !r.Approved || len(r.Changes) != 0 {
		t.Fatalf("another deployment's mapping staled the binding: %+v", r)
	}
	for _, c := range []struct {
		name, old, new, entry string
	}{
		{"capability", "Read one record with its status and notes.", "Read one record.", "capabilities.records.read"},
		{"tool of its connector", `{name: "append_note", connector: "sandbox.records", capability: "records.note.append", risk: "consequential", enabled: true},`,
			`{name: "append_note", connector: "sandbox.records", capability: "records.note.append", risk: "consequential", enabled: true},
	{name: "delete_note", connector: "sandbox.records", capability: "records.note.append", risk: "consequential", enabled: false},`, "tools.sandbox.records/delete_note"},
		{"connector", `aliases: ["records-sandbox"]`, `aliases: ["records-sandbox", "records-old"]`, "connectors.sandbox.records"},
	} {
		src := withOther()
		if !strings.Contains(src, c.old) {
			t.Fatalf("%s: the starter registry changed", c.name)
		}
		f.WriteRegistry(strings.Replace(src, c.old, c.new, 1))
		r := inspect()
		if r.Approved || len(r.Changes) != 1 || r.Changes[0].Link != bind.LinkRegistry || !strings.Contains(r.Changes[0].Detail, "registry entry "+c.entry+" ") {
			t.Fatalf("%s: %+v", c.name, r)
		}
		if err := r.Err(); !hosttest.HasCode(t, err, blocking.PlanDigestMismatch) {
			t.Fatalf("%s: %v", c.name, err)
		}
	}
}

// TestV1BindingStaysVerifiable: a binding made before plans covered only
// what they use (oa.plan/v1, the whole registry's digest) is checked in
// its own format: approved while nothing changed, stale on any registry
// change, as it was approved.
func TestV1BindingStaysVerifiable(t *testing.T) {
	f, _ := newFixture(t)
	ctx := context.Background()
	plan, _, err := resolve.Compute(ctx, f.host, f.Release, resolve.Request{Deployment: "clinic", Model: model, Type: resolve.PlanTypeV1}, resolve.ComputeOptions{Now: f.Now})
	if err != nil {
		t.Fatal(err)
	}
	if plan.Type != resolve.PlanTypeV1 || plan.RegistryDigest == "" || plan.RegistryEntries != nil {
		t.Fatalf("v1 plan: %+v", plan)
	}
	b, err := bind.Bind(ctx, f.host, f.Ref, false, plan, bind.Approval{By: "Dr Ada", Approved: true, Now: f.Now})
	if err != nil {
		t.Fatal(err)
	}
	r, err := bind.Inspect(ctx, f.host, b, bind.InspectOptions{Now: f.Now})
	if err != nil || !r.Approved {
		t.Fatalf("an unchanged v1 binding: %v %+v", err, r)
	}
	f.WriteRegistry(withOther())
	r, err = bind.Inspect(ctx, f.host, b, bind.InspectOptions{Now: f.Now})
	if err != nil || r.Approved || len(r.Changes) != 1 || r.Changes[0].Detail != "registry digest changed" {
		t.Fatalf("a v1 binding after a registry change: %v %+v", err, r)
	}
}
