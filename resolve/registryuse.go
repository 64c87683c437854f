package resolve

import (
	"slices"
	"strings"

	"github.com/oa-dev/oa/internal/canonical"
	"github.com/oa-dev/oa/ir"
)

// PlanTypeV1 is the first plan format: its registryDigest covers the
// whole registry, so any registry change (a mapping for another
// deployment too) changes every plan. Bindings made with it stay
// verifiable: a plan is recomputed in the format of the bound one
// (Request.Type) until the deployment is bound again.
const PlanTypeV1 = "oa.plan/v1"

// RegistryEntry is one registry entry a plan relies on, named as the
// registry file names it (capabilities.KEY, connectors.ID,
// tools.CONNECTOR/TOOL), with the sha256 of its canonical JSON.
type RegistryEntry struct {
	Entry  string `json:"entry"`
	Digest string `json:"digest"`
}

// usedEntries are the registry entries the plan's resolution read, sorted
// by name: the registry capability of each package capability, every
// runtime tool that performs one of them (enabled or not: an enabled one
// added elsewhere makes the capability ambiguous), and for each connector
// the plan uses its entry (availability, aliases) and every tool listed
// for it (the ceiling's evidence: an enabled tool outside the package
// ceiling, or one the registry stops listing, changes the proof). A
// change to any other entry resolves to the same plan.
func usedEntries(x *index, plan *Plan) []RegistryEntry {
	r := x.st.Registry
	var out []RegistryEntry
	add := func(name string, v any) {
		b, err := canonical.Marshal(v)
		if err != nil {
			panic("resolve: a registry entry is always encodable: " + err.Error())
		}
		out = append(out, RegistryEntry{Entry: name, Digest: ir.DigestBytes(b)})
	}
	tools := map[connectorTool]bool{}
	for _, c := range x.st.Worker.Capabilities {
		if rc, ok := r.Capabilities[c.Key]; ok {
			add("capabilities."+c.Key, rc)
		}
		for _, t := range x.toolsByCap[c.Key] {
			tools[connectorTool{t.Connector, t.Name}] = true
		}
	}
	connectors := map[string]bool{}
	for _, e := range plan.Capabilities {
		connectors[e.Connector] = true
	}
	for id := range connectors {
		add("connectors."+id, r.Connectors[id])
		for _, name := range x.toolNames[id] {
			tools[connectorTool{id, name}] = true
		}
	}
	for k := range tools {
		add("tools."+k.connector+"/"+k.tool, x.registered[k])
	}
	slices.SortFunc(out, func(a, b RegistryEntry) int { return strings.Compare(a.Entry, b.Entry) })
	return out
}
