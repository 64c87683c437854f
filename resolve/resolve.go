package resolve

import (
	"slices"
	"strings"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connection"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/confine"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/projection"
)

// State is everything one resolution reads, already loaded and verified.
type State struct {
	Host            string
	Worker          *ir.Worker
	ArtifactDigest  string
	WorkerIRDigest  string
	AdmissionDigest string
	PolicyDigest    string
	Projection      *projection.Projection
	Registry        *Registry
	// Connections are the current versions of every connection on the
	// host; a nil Record is a row that does not verify.
	Connections []connection.Listed
	// Home is the host folder, under which each connection's server gets
	// its private folders ("" gives each start temporary ones).
	Home string
	// ForbidUnconfined is the host policy's confinement.allow_unconfined
	// set to false: a connection running unconfined cannot be planned.
	ForbidUnconfined bool
	// ConfinementMinimum is the host policy's confinement minimum
	// (host.Policy.ConfinementMinimum): the guarantees a confined
	// connection's server must hold on this host to be planned. Nil asks
	// for none.
	ConfinementMinimum []string
	// Enforcement is the level a start of a connection's server is held
	// to on this host; nil is the live level (Enforcement, remembered).
	Enforcement func(connector.Config) (confine.Level, error)
}

// Request names what the plan is for.
type Request struct {
	Deployment string
	Model      string
	// Type is the plan format to resolve in: "" or PlanType for a new
	// plan, PlanTypeV1 to recompute a plan bound in that format (its
	// registry link is the whole registry's digest).
	Type string
}

// Resolve proves the nine resolution rules for every capability of the
// package, and that every capability it serves as a tool has an MCP-safe
// name of its own, and returns the plan, or every refusal found (one or more per
// failing capability, each located at capabilities.<key>). It reads only
// st and the level each planned connection's server is held to on this
// host (st.Enforcement), and is deterministic; it takes time linear in
// the number of capabilities, runtime tools and connections. A confined
// connection whose level is below st.ConfinementMinimum is refused
// (confinement_below_minimum).
func Resolve(st *State, req Request) (*Plan, error) {
	x, refused := newIndex(st)
	if refused != nil {
		return nil, refused
	}
	plan := &Plan{
		Type: PlanType, Host: st.Host, Deployment: req.Deployment, Model: req.Model,
		Package: st.Worker.Name, Version: st.Worker.Version,
		ArtifactDigest: st.ArtifactDigest, WorkerIRDigest: st.WorkerIRDigest, AdmissionDigest: st.AdmissionDigest,
		PolicyDigest:  st.PolicyDigest,
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
	all = append(all, servedNameProblems(plan)...)
	all = append(all, stepArgumentProblems(st, plan)...)
	if len(all) > 0 {
		return nil, all
	}
	if req.Type == PlanTypeV1 {
		plan.Type, plan.RegistryDigest = PlanTypeV1, st.Registry.Digest()
	} else {
		plan.RegistryEntries = usedEntries(x, plan)
	}
	return plan, nil
}

// servedNameProblems refuses a plan whose read-only, approval-free
// capabilities (the ones the coordinator serves as tools) would be served
// under a name MCP clients refuse or under one name twice. The compiler
// refuses the same package first; this holds for any IR that reaches a
// host.
func servedNameProblems(plan *Plan) blocking.List {
	var keys []string
	for _, e := range plan.Capabilities {
		if e.Risk == ir.ReadOnly && e.Approval == ir.ApprovalNotRequired {
			keys = append(keys, e.CapabilityKey)
		}
	}
	var l blocking.List
	for _, p := range ir.CheckToolNames(keys) {
		l = append(l, blocking.New(p.Code, "%s", p.Detail).At("", p.PathString()))
	}
	return l
}

// index holds the registry and connections keyed for one pass, so that a
// resolution takes time linear in the size of its state: no step scans
// every connection, tool or ceiling pattern per capability.
type index struct {
	st *State
	// toolsByCap lists every registry tool for a capability key.
	toolsByCap map[string][]RuntimeTool
	// registered is every registry tool by connector id and tool name,
	// and toolNames the names of each connector's tools.
	registered map[connectorTool]RuntimeTool
	toolNames  map[string][]string
	// conns holds the connections of each canonical connector.
	conns map[string]*connectorConns
	// usable lists, by canonical connector and tool name, the enabled,
	// verified, online connections whose verified inventory lists the
	// tool, in state order.
	usable map[connectorTool][]*connection.Record
	// ceilingKeys matches capability keys against the package ceiling.
	ceilingKeys ceilingSet
	// outside remembers, per connector, its enabled registry tools outside
	// the package ceiling, by name.
	outside map[string][]RuntimeTool
	// unlisted remembers, per connection, how many tools it exposes that
	// the registry does not list for its connector.
	unlisted map[string]int
	// levels remembers, per connection, the level its server is held to,
	// and enforcement is how it is asked (State.Enforcement).
	levels      map[string]levelOf
	enforcement func(connector.Config) (confine.Level, error)
}

// connectorConns are the connections naming one canonical connector
// (directly or by an alias), sorted for the proofs of index.connection.
type connectorConns struct {
	// all counts them.
	all int
	// aliased name the connector by an alias, in state order.
	aliased []*connection.Record
	// stale is the first enabled one whose revision was never verified.
	stale *connection.Record
	// online counts the enabled, verified, online ones.
	online int
}

// connectorTool is a tool of a connector.
type connectorTool struct{ connector, tool string }

func newIndex(st *State) (*index, blocking.List) {
	r := st.Registry
	x := &index{
		st:          st,
		toolsByCap:  make(map[string][]RuntimeTool, len(r.Tools)),
		registered:  make(map[connectorTool]RuntimeTool, len(r.Tools)),
		toolNames:   make(map[string][]string, len(r.Connectors)),
		conns:       make(map[string]*connectorConns, len(r.Connectors)),
		usable:      make(map[connectorTool][]*connection.Record, len(st.Connections)),
		ceilingKeys: newCeilingSet(st.Worker.Ceiling.Capabilities),
		outside:     map[string][]RuntimeTool{},
		unlisted:    make(map[string]int, len(st.Connections)),
		levels:      map[string]levelOf{},
		enforcement: st.Enforcement,
	}
	if x.enforcement == nil {
		x.enforcement = Enforcement
	}
	for _, t := range r.Tools {
		x.toolsByCap[t.Capability] = append(x.toolsByCap[t.Capability], t)
		x.registered[connectorTool{t.Connector, t.Name}] = t
		x.toolNames[t.Connector] = append(x.toolNames[t.Connector], t.Name)
	}
	var refused blocking.List
	// One block holds every connector's connectorConns: a connection
	// counts only under a connector of the registry.
	pool := make([]connectorConns, 0, len(r.Connectors))
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
		cc := x.conns[canon]
		if cc == nil {
			pool = append(pool, connectorConns{})
			cc = &pool[len(pool)-1]
			x.conns[canon] = cc
		}
		x.addConnection(cc, canon, l.Record)
	}
	return x, refused
}

// addConnection files rec, a connection to canonical connector canon.
func (x *index) addConnection(cc *connectorConns, canon string, rec *connection.Record) {
	cc.all++
	switch {
	case rec.Connector != canon:
		cc.aliased = append(cc.aliased, rec)
	case !rec.Enabled:
	case !rec.Verified():
		if cc.stale == nil {
			cc.stale = rec
		}
	case !rec.Online:
	default:
		cc.online++
		inv := rec.Verification.Inventory
		for _, t := range inv.Tools {
			// Exactly the tools a lookup by name finds, each once.
			k := connectorTool{canon, t.Name}
			if u := x.usable[k]; (len(u) == 0 || u[len(u)-1] != rec) && hasTool(inv, t.Name) {
				x.usable[k] = append(u, rec)
			}
		}
	}
}

// ceilingSet is a package ceiling keyed for ir.CeilingAllows: a key is
// allowed when a pattern equals it, or when a pattern ending in "*" is a
// strict prefix of it once the "*" is cut.
type ceilingSet struct {
	exact map[string]bool
	// prefixes are the patterns ending in "*", cut, and prefixLens their
	// distinct lengths.
	prefixes   map[string]bool
	prefixLens []int
}

func newCeilingSet(patterns []string) ceilingSet {
	c := ceilingSet{exact: make(map[string]bool, len(patterns)), prefixes: map[string]bool{}}
	for _, p := range patterns {
		c.exact[p] = true
		if prefix, ok := strings.CutSuffix(p, "*"); ok && !c.prefixes[prefix] {
			c.prefixes[prefix] = true
			if !slices.Contains(c.prefixLens, len(prefix)) {
				c.prefixLens = append(c.prefixLens, len(prefix))
			}
		}
	}
	return c
}

// allows is ir.CeilingAllows(patterns, key).
func (c ceilingSet) allows(key string) bool {
	if c.exact[key] {
		return true
	}
	for _, n := range c.prefixLens {
		if n < len(key) && c.prefixes[key[:n]] {
			return true
		}
	}
	return false
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
	if x.st.ForbidUnconfined && rec.Config.Confinement.IsUnconfined() {
		return Entry{}, one(blocking.ConfinementForbidden, "connection %s runs unconfined, which this host's policy forbids", rec.Name)
	}
	enforced, err := x.enforced(rec)
	if err != nil {
		return Entry{}, []*blocking.Error{err}
	}
	return Entry{
		CapabilityKey: c.Key, RuntimeTool: tool.Name, Connector: tool.Connector,
		ConnectionID: rec.Name, ConnectionRevision: rec.Revision, AuthorityDigest: rec.AuthorityDigest(),
		InventoryDigest: rec.Verification.Inventory.Digest, ToolSchemaDigest: live.Digest,
		Risk: c.Risk, Approval: stricter(c.Approval, regCap.Approval),
		Confinement: rec.Config.Confinement, Enforced: enforced,
	}, nil
}

// enforced is the level rec's server is held to on this host, as the
// plan records it, or the refusal when this host cannot hold it to the
// policy's minimum (confinement_below_minimum) or confine it at all
// (confinement_unavailable). Each connection's level is asked once per
// resolution.
func (x *index) enforced(rec *connection.Record) (*Enforced, *blocking.Error) {
	if e, done := x.levels[rec.Name]; done {
		return e.enforced, copyRefusal(e.err)
	}
	level, err := x.enforcement(rec.Config)
	if err == nil {
		err = level.CheckMinimum(x.st.ConfinementMinimum)
	}
	e := levelOf{enforced: EnforcedOf(level)}
	if err != nil {
		r := blocking.Refusals(err)
		if len(r) == 0 {
			r = blocking.List{blocking.New(blocking.ConfinementUnavailable, "this host cannot tell how it would confine the server")}
		}
		e = levelOf{err: blocking.New(r[0].Code, "connection %s: %s", rec.Name, r[0].Detail)}
	}
	x.levels[rec.Name] = e
	return e.enforced, copyRefusal(e.err)
}

// levelOf is one connection's level in a resolution, or its refusal.
type levelOf struct {
	enforced *Enforced
	err      *blocking.Error
}

// copyRefusal is a copy of r for one capability to locate (nil for nil).
func copyRefusal(r *blocking.Error) *blocking.Error {
	if r == nil {
		return nil
	}
	c := *r
	return &c
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
	cc := x.conns[tool.Connector]
	if cc == nil {
		cc = &connectorConns{}
	}
	usable := x.usable[connectorTool{tool.Connector, tool.Name}]
	switch {
	case len(cc.aliased) > 0:
		errs := make([]*blocking.Error, len(cc.aliased))
		for i, rec := range cc.aliased {
			errs[i] = blocking.New(blocking.ConnectorNotCanonical, "connection %s names connector alias %s; the canonical id is %s", rec.Name, rec.Connector, tool.Connector)
		}
		return nil, errs
	case len(usable) == 1:
		return usable[0], nil
	case len(usable) > 1:
		return nil, one(blocking.ConnectionAmbiguous, "%d enabled, online, verified connections to connector %s list tool %s: %s", len(usable), tool.Connector, tool.Name, names(usable))
	case cc.stale != nil:
		return nil, one(blocking.ConnectionRevisionChanged, "connection %s is at revision %d, which was never verified", cc.stale.Name, cc.stale.Revision)
	case cc.online == 0:
		return nil, one(blocking.ConnectorUnavailable, "connector %s is not connected: no enabled, online, verified connection (of %d)", tool.Connector, cc.all)
	}
	return nil, one(blocking.ConnectionMissing, "no verified connection to connector %s lists tool %s (needed for %s)", tool.Connector, tool.Name, key)
}

// ceiling refuses a connection whose connector has an enabled tool outside
// the package ceiling, or which exposes a tool the registry does not list.
// Each call returns refusals of its own, for its caller to locate.
func (x *index) ceiling(connectorID string, rec *connection.Record) []*blocking.Error {
	outside, done := x.outside[connectorID]
	if !done {
		w := x.st.Worker
		for _, name := range ir.SortStrings(slices.Clone(x.toolNames[connectorID])) {
			t := x.registered[connectorTool{connectorID, name}]
			if t.Enabled && (!x.ceilingKeys.allows(t.Capability) || (t.Risk == ir.Consequential && w.Ceiling.MaxRisk != ir.Consequential)) {
				outside = append(outside, t)
			}
		}
		x.outside[connectorID] = outside
	}
	unlisted, done := x.unlisted[rec.Name]
	if !done {
		for _, t := range rec.Verification.Inventory.Tools {
			if _, ok := x.registered[connectorTool{connectorID, t.Name}]; !ok {
				unlisted++
			}
		}
		x.unlisted[rec.Name] = unlisted
	}
	var errs []*blocking.Error
	for _, t := range outside {
		errs = append(errs, blocking.New(blocking.ToolOutsideCeiling, "enabled runtime tool %s of connector %s performs %s (%s), outside the package ceiling", t.Name, connectorID, t.Capability, t.Risk))
	}
	if unlisted > 0 {
		errs = append(errs, blocking.New(blocking.ToolOutsideCeiling, "connection %s exposes %d tools the registry does not list for connector %s (`oa connection show %s` names them)", rec.Name, unlisted, connectorID, rec.Name))
	}
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
