package resolve

import (
	"strings"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connection"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/harness"
	"github.com/oa-dev/oa/ir"
)

// State is everything one resolution reads, already loaded and verified.
type State struct {
	Host            string
	Worker          *ir.Worker
	ArtifactDigest  string
	WorkerIRDigest  string
	AdmissionDigest string
	PolicyDigest    string
	Projection      *harness.Projection
	Registry        *Registry
	// Connections are the current versions of every connection on the
	// host; a nil Record is a row that does not verify.
	Connections []connection.Listed
}

// Request names what the plan is for.
type Request struct {
	Deployment string
	Model      string
}

// Resolve proves the nine resolution rules for every capability of the
// package and returns the plan, or every refusal found (one or more per
// failing capability, each located at capabilities.<key>). It reads only
// st and is deterministic; it takes time linear in the number of
// capabilities, runtime tools and connections.
func Resolve(st *State, req Request) (*Plan, error) {
	x, refused := newIndex(st)
	if refused != nil {
		return nil, refused
	}
	plan := &Plan{
		Type: PlanType, Host: st.Host, Deployment: req.Deployment, Model: req.Model,
		Package: st.Worker.Name, Version: st.Worker.Version,
		ArtifactDigest: st.ArtifactDigest, WorkerIRDigest: st.WorkerIRDigest, AdmissionDigest: st.AdmissionDigest,
		PolicyDigest: st.PolicyDigest, RegistryDigest: st.Registry.Digest(),
		PersonaDigest: st.Projection.PersonaDigest, SkillDigest: st.Projection.SkillDigest,
		MaterializationDigest: st.Projection.MaterializationDigest,
		Capabilities:          make([]Entry, 0, len(st.Worker.Capabilities)),
	}
	var all blocking.List
	for _, c := range st.Worker.Capabilities {
		e, errs := x.capability(c)
		for _, err := range errs {
			all = append(all, err.At("", "capabilities."+c.Key))
		}
		if len(errs) == 0 {
			plan.Capabilities = append(plan.Capabilities, e)
		}
	}
	if len(all) > 0 {
		return nil, all
	}
	return plan, nil
}

// index holds the registry and connections keyed for one pass.
type index struct {
	st *State
	// toolsByCap lists every registry tool for a capability key.
	toolsByCap map[string][]RuntimeTool
	// registered is every registry tool by connector id and tool name.
	registered map[string]map[string]RuntimeTool
	// conns lists connections by the canonical connector they name.
	conns map[string][]*connection.Record
	// ceilingDone remembers the ceiling check per connection.
	ceilingDone map[string][]*blocking.Error
}

func newIndex(st *State) (*index, blocking.List) {
	r := st.Registry
	x := &index{st: st, toolsByCap: map[string][]RuntimeTool{}, registered: map[string]map[string]RuntimeTool{}, conns: map[string][]*connection.Record{}, ceilingDone: map[string][]*blocking.Error{}}
	for _, t := range r.Tools {
		x.toolsByCap[t.Capability] = append(x.toolsByCap[t.Capability], t)
		if x.registered[t.Connector] == nil {
			x.registered[t.Connector] = map[string]RuntimeTool{}
		}
		x.registered[t.Connector][t.Name] = t
	}
	var refused blocking.List
	for _, l := range st.Connections {
		if l.Record == nil {
			// Which connector an unverifiable row serves is unknown, so it
			// may be the one that should be chosen: refuse, never guess.
			refused = append(refused, blocking.New(blocking.ConnectionUnverifiable, "connection %s", l.Name).At("", "connections."+l.Name))
			continue
		}
		canon, _ := r.Canonical(l.Record.Connector)
		if canon == "" {
			continue // a connection to a connector the registry does not know serves nothing
		}
		x.conns[canon] = append(x.conns[canon], l.Record)
	}
	return x, refused
}

// capability proves the rules for one capability.
func (x *index) capability(c ir.Capability) (Entry, []*blocking.Error) {
	r := x.st.Registry
	regCap, ok := r.Capabilities[c.Key]
	if !ok { // proof 1
		return Entry{}, one(blocking.CapabilityNotInRegistry, "the registry lists no capability %s", c.Key)
	}
	tool, errs := x.runtimeTool(c.Key)
	if errs != nil {
		return Entry{}, errs
	}
	if conn := r.Connectors[tool.Connector]; !conn.Available() { // proof 3
		return Entry{}, one(blocking.ConnectorUnavailable, "connector %s is %s and enabled=%v in the registry", tool.Connector, conn.Availability, conn.Enabled)
	}
	if regCap.Risk != c.Risk || tool.Risk != c.Risk { // proof 7, host side
		return Entry{}, one(blocking.RiskMismatch, "package says %s, registry capability %s, runtime tool %s %s", c.Risk, regCap.Risk, tool.Name, tool.Risk)
	}
	rec, errs := x.connection(c.Key, tool)
	if errs != nil {
		return Entry{}, errs
	}
	live, _ := rec.Verification.Inventory.Tool(tool.Name)
	if readOnly := live.Annotations.ReadOnly != nil && *live.Annotations.ReadOnly; readOnly != (c.Risk == ir.ReadOnly) { // proof 7, tool side
		return Entry{}, one(blocking.RiskMismatch, "package says %s, but tool %s of connection %s has readOnlyHint=%v", c.Risk, tool.Name, rec.Name, readOnly)
	}
	if errs := x.ceiling(tool.Connector, rec); errs != nil { // proof 9
		return Entry{}, errs
	}
	return Entry{
		CapabilityKey: c.Key, RuntimeTool: tool.Name, Connector: tool.Connector,
		ConnectionID: rec.Name, ConnectionRevision: rec.Revision, AuthorityDigest: rec.AuthorityDigest(),
		InventoryDigest: rec.Verification.Inventory.Digest, ToolSchemaDigest: live.Digest,
		Risk: c.Risk, Approval: stricter(c.Approval, regCap.Approval),
	}, nil
}

// runtimeTool finds the one enabled runtime tool for a capability, named
// by a canonical connector (proofs 2 and 4).
func (x *index) runtimeTool(key string) (RuntimeTool, []*blocking.Error) {
	var enabled []RuntimeTool
	var names []string
	for _, t := range x.toolsByCap[key] {
		if t.Enabled {
			enabled = append(enabled, t)
			names = append(names, t.Connector+"/"+t.Name)
		}
	}
	if len(enabled) == 0 {
		return RuntimeTool{}, one(blocking.RuntimeToolMissing, "no enabled runtime tool in the registry performs %s", key)
	}
	var errs []*blocking.Error
	for _, t := range enabled {
		switch canon, alias := x.st.Registry.Canonical(t.Connector); {
		case alias:
			errs = append(errs, blocking.New(blocking.ConnectorNotCanonical, "runtime tool %s names connector alias %s; the canonical id is %s", t.Name, t.Connector, canon))
		case canon == "":
			errs = append(errs, blocking.New(blocking.ConnectorNotCanonical, "runtime tool %s names connector %s, which the registry does not define", t.Name, t.Connector))
		}
	}
	if len(enabled) > 1 {
		errs = append(errs, blocking.New(blocking.RuntimeToolAmbiguous, "%d enabled runtime tools perform %s: %s", len(enabled), key, strings.Join(names, ", ")))
	}
	if errs != nil {
		return RuntimeTool{}, errs
	}
	return enabled[0], nil
}

// connection finds the one online, verified, enabled connection of the
// tool's connector that lists the tool (proofs 2, 3, 5 and 6).
func (x *index) connection(key string, tool RuntimeTool) (*connection.Record, []*blocking.Error) {
	var usable, online, stale []*connection.Record
	var errs []*blocking.Error
	for _, rec := range x.conns[tool.Connector] {
		switch {
		case rec.Connector != tool.Connector:
			errs = append(errs, blocking.New(blocking.ConnectorNotCanonical, "connection %s names connector alias %s; the canonical id is %s", rec.Name, rec.Connector, tool.Connector))
		case !rec.Enabled:
		case !rec.Verified():
			stale = append(stale, rec)
		case !rec.Online:
		default:
			online = append(online, rec)
			if hasTool(rec.Verification.Inventory, tool.Name) {
				usable = append(usable, rec)
			}
		}
	}
	switch {
	case errs != nil:
		return nil, errs
	case len(usable) == 1:
		return usable[0], nil
	case len(usable) > 1:
		return nil, one(blocking.ConnectionAmbiguous, "%d enabled, online, verified connections to connector %s list tool %s: %s", len(usable), tool.Connector, tool.Name, names(usable))
	case len(stale) > 0:
		return nil, one(blocking.ConnectionRevisionChanged, "connection %s is at revision %d, which was never verified", stale[0].Name, stale[0].Revision)
	case len(online) == 0:
		return nil, one(blocking.ConnectorUnavailable, "connector %s is not connected: no enabled, online, verified connection (of %d)", tool.Connector, len(x.conns[tool.Connector]))
	}
	return nil, one(blocking.ConnectionMissing, "no verified connection to connector %s lists tool %s (needed for %s)", tool.Connector, tool.Name, key)
}

// ceiling refuses a connection whose connector has an enabled tool outside
// the package ceiling, or which exposes a tool the registry does not list.
func (x *index) ceiling(connectorID string, rec *connection.Record) []*blocking.Error {
	if errs, done := x.ceilingDone[rec.Name]; done {
		return errs
	}
	w := x.st.Worker
	var errs []*blocking.Error
	for _, name := range ir.SortStrings(keys(x.registered[connectorID])) {
		t := x.registered[connectorID][name]
		if t.Enabled && (!ir.CeilingAllows(w.Ceiling.Capabilities, t.Capability) || (t.Risk == ir.Consequential && w.Ceiling.MaxRisk != ir.Consequential)) {
			errs = append(errs, blocking.New(blocking.ToolOutsideCeiling, "enabled runtime tool %s of connector %s performs %s (%s), outside the package ceiling", t.Name, connectorID, t.Capability, t.Risk))
		}
	}
	unlisted := 0
	for _, t := range rec.Verification.Inventory.Tools {
		if _, ok := x.registered[connectorID][t.Name]; !ok {
			unlisted++
		}
	}
	if unlisted > 0 {
		errs = append(errs, blocking.New(blocking.ToolOutsideCeiling, "connection %s exposes %d tools the registry does not list for connector %s (`oa connection show %s` names them)", rec.Name, unlisted, connectorID, rec.Name))
	}
	x.ceilingDone[rec.Name] = errs
	return errs
}

func hasTool(inv connector.Inventory, name string) bool {
	_, ok := inv.Tool(name)
	return ok
}

func names(recs []*connection.Record) string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.Name
	}
	return strings.Join(out, ", ")
}

func one(code blocking.Code, format string, args ...any) []*blocking.Error {
	return []*blocking.Error{blocking.New(code, format, args...)}
}

// stricter returns the approval that demands more: a host may add a
// person's approval, never remove one a package asks for.
func stricter(a, b ir.Approval) ir.Approval {
	if a == ir.ApprovalRequired || b == ir.ApprovalRequired {
		return ir.ApprovalRequired
	}
	return ir.ApprovalNotRequired
}
