package bind

import (
	"fmt"
	"slices"
	"strings"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector/confine"
	"github.com/oa-dev/oa/internal/canonical"
	"github.com/oa-dev/oa/resolve"
)

// Link names one link of the chain a plan depends on.
type Link string

// Links a change can be in.
const (
	LinkAdmission          Link = "admission"
	LinkArtifact           Link = "artifact"
	LinkPolicy             Link = "policy"
	LinkRegistry           Link = "registry"
	LinkPersona            Link = "persona"
	LinkModel              Link = "model"
	LinkConnection         Link = "connection"
	LinkConnectionRevision Link = "connection_revision"
	LinkToolInventory      Link = "tool_inventory"
	LinkCapabilities       Link = "capabilities"
	LinkConfinement        Link = "confinement"
)

// Change is one difference between the approved plan and the live one.
type Change struct {
	Link       Link   `json:"link"`
	Capability string `json:"capability,omitempty"`
	Detail     string `json:"detail"`
}

// Report says whether a deployment's live plan is the approved one.
type Report struct {
	Deployment    string `json:"deployment"`
	Seq           int64  `json:"bindingSeq"`
	BoundDigest   string `json:"boundPlanDigest"`
	CurrentDigest string `json:"currentPlanDigest,omitempty"`
	// Approved is true only when the live plan's digest is the bound one.
	Approved bool     `json:"approved"`
	Changes  []Change `json:"changes"`
	// Refusals are why the live plan could not be resolved at all.
	Refusals blocking.List `json:"refusals,omitempty"`
}

// Err is nil when the live plan is the approved one, and otherwise a
// plan_digest_mismatch refusal naming the changed links.
func (r *Report) Err() error {
	if r.Approved {
		return nil
	}
	links := ""
	seen := map[Link]bool{}
	for _, c := range r.Changes {
		if !seen[c.Link] {
			seen[c.Link] = true
			if links != "" {
				links += ", "
			}
			links += string(c.Link)
		}
	}
	return blocking.New(blocking.PlanDigestMismatch, "deployment %s: changed %s", r.Deployment, links)
}

// Compare checks the live plan (or the error resolving it) against the
// binding and names every link that changed.
func Compare(b *Binding, current *resolve.Plan, resolveErr error) *Report {
	r := &Report{Deployment: b.Deployment, Seq: b.Seq, BoundDigest: b.PlanDigest, Changes: []Change{}}
	if resolveErr != nil {
		r.Refusals = blocking.Refusals(resolveErr)
		for _, ref := range r.Refusals {
			r.Changes = append(r.Changes, Change{Link: linkOf(ref.Code), Capability: capabilityOf(ref.Path), Detail: ref.Entry().Title + ": " + ref.Detail})
		}
		return r
	}
	r.CurrentDigest = current.Digest()
	r.Approved = r.CurrentDigest == b.PlanDigest
	r.Changes = diff(&b.Plan, current)
	if !r.Approved && len(r.Changes) == 0 {
		r.Changes = append(r.Changes, Change{Link: LinkCapabilities, Detail: "the plan differs in a field no link names"})
	}
	return r
}

// diff lists the changes between the approved plan and the live one.
func diff(old, cur *resolve.Plan) []Change {
	out := []Change{}
	chain := []struct {
		link    Link
		name    string
		was, is string
	}{
		{LinkAdmission, "artifact digest", old.ArtifactDigest, cur.ArtifactDigest},
		{LinkAdmission, "IR digest", old.WorkerIRDigest, cur.WorkerIRDigest},
		{LinkAdmission, "admission record", old.AdmissionDigest, cur.AdmissionDigest},
		{LinkPolicy, "policy digest", old.PolicyDigest, cur.PolicyDigest},
		{LinkRegistry, "registry digest", old.RegistryDigest, cur.RegistryDigest},
		{LinkPersona, "persona digest", old.PersonaDigest, cur.PersonaDigest},
		{LinkPersona, "skill digest", old.SkillDigest, cur.SkillDigest},
		{LinkPersona, "materialization digest", old.MaterializationDigest, cur.MaterializationDigest},
		{LinkModel, "model", old.Model, cur.Model},
		{LinkCapabilities, "host or deployment", old.Host + "/" + old.Deployment, cur.Host + "/" + cur.Deployment},
	}
	for _, c := range chain {
		if c.was != c.is {
			out = append(out, Change{Link: c.link, Detail: fmt.Sprintf("%s changed", c.name)})
		}
	}
	out = append(out, registryChanges(old.RegistryEntries, cur.RegistryEntries)...)
	curEntries := map[string]resolve.Entry{}
	for _, e := range cur.Capabilities {
		curEntries[e.CapabilityKey] = e
	}
	for _, was := range old.Capabilities {
		is, ok := curEntries[was.CapabilityKey]
		delete(curEntries, was.CapabilityKey)
		if !ok {
			out = append(out, Change{Link: LinkCapabilities, Capability: was.CapabilityKey, Detail: "no longer in the plan"})
			continue
		}
		out = append(out, entryChanges(was, is)...)
	}
	for _, e := range cur.Capabilities {
		if _, added := curEntries[e.CapabilityKey]; added {
			out = append(out, Change{Link: LinkCapabilities, Capability: e.CapabilityKey, Detail: "new in the plan"})
		}
	}
	return out
}

// registryChanges names each registry entry the plan uses that changed,
// is new to it or is no longer used by it (oa.plan/v2).
func registryChanges(was, is []resolve.RegistryEntry) []Change {
	var out []Change
	cur := make(map[string]string, len(is))
	for _, e := range is {
		cur[e.Entry] = e.Digest
	}
	for _, e := range was {
		d, ok := cur[e.Entry]
		delete(cur, e.Entry)
		switch {
		case !ok:
			out = append(out, Change{Link: LinkRegistry, Detail: fmt.Sprintf("registry entry %s is no longer used or listed", e.Entry)})
		case d != e.Digest:
			out = append(out, Change{Link: LinkRegistry, Detail: fmt.Sprintf("registry entry %s changed", e.Entry)})
		}
	}
	for _, e := range is {
		if _, added := cur[e.Entry]; added {
			out = append(out, Change{Link: LinkRegistry, Detail: fmt.Sprintf("registry entry %s is new to the plan", e.Entry)})
		}
	}
	return out
}

func entryChanges(was, is resolve.Entry) []Change {
	var out []Change
	add := func(link Link, format string, args ...any) {
		out = append(out, Change{Link: link, Capability: was.CapabilityKey, Detail: fmt.Sprintf(format, args...)})
	}
	if was.RuntimeTool != is.RuntimeTool || was.Connector != is.Connector {
		add(LinkRegistry, "runtime tool %s/%s is now %s/%s", was.Connector, was.RuntimeTool, is.Connector, is.RuntimeTool)
	}
	if was.ConnectionID != is.ConnectionID {
		add(LinkConnection, "connection %s is now %s", was.ConnectionID, is.ConnectionID)
	} else if was.ConnectionRevision != is.ConnectionRevision || was.AuthorityDigest != is.AuthorityDigest {
		add(LinkConnectionRevision, "connection %s revision %d is now %d", was.ConnectionID, was.ConnectionRevision, is.ConnectionRevision)
	}
	if confinement(was) != confinement(is) {
		add(LinkConfinement, "the confinement of connection %s is now: %s", is.ConnectionID, confine.Describe(is.Confinement))
	} else if d := levelChange(was.Enforced, is.Enforced); d != "" {
		add(LinkConfinement, "the confinement level of connection %s is now: %s", is.ConnectionID, d)
	}
	if was.InventoryDigest != is.InventoryDigest || was.ToolSchemaDigest != is.ToolSchemaDigest {
		add(LinkToolInventory, "the verified tool list or the schema of tool %s changed", is.RuntimeTool)
	}
	if was.Risk != is.Risk || was.Approval != is.Approval {
		add(LinkRegistry, "risk %s/approval %s is now %s/%s", was.Risk, was.Approval, is.Risk, is.Approval)
	}
	return out
}

// linkOf names the link a resolution refusal points at.
func linkOf(code blocking.Code) Link {
	switch code {
	case blocking.AdmissionNotActive, blocking.AdmissionMissing, blocking.AdmissionExpired, blocking.ReleaseRevoked,
		blocking.AdmissionMismatched, blocking.AdmissionUnverified:
		return LinkAdmission
	case blocking.ConnectionInventoryChanged:
		return LinkToolInventory
	case blocking.ConnectionRevisionChanged:
		return LinkConnectionRevision
	case blocking.ConnectionMissing, blocking.ConnectionAmbiguous, blocking.ConnectionUnverifiable,
		blocking.ConnectionVerifyFailed, blocking.RemoteVerifyFailed, blocking.ConnectorUnavailable:
		return LinkConnection
	case blocking.PolicyInvalid, blocking.PolicyUnreadable, blocking.PolicyKeyInvalid:
		return LinkPolicy
	case blocking.ConfinementBelowMinimum, blocking.ConfinementUnavailable, blocking.ConfinementForbidden:
		return LinkConfinement
	}
	if e, ok := blocking.Lookup(code); ok && e.Stage == blocking.StageOCI {
		// The release's stored artifact (a damaged or missing blob, an
		// IR that no longer decodes), not the capability registry.
		return LinkArtifact
	}
	return LinkRegistry
}

// capabilityOf extracts the key from a refusal path capabilities.<key>.
func capabilityOf(path string) string {
	const prefix = "capabilities."
	if len(path) > len(prefix) && path[:len(prefix)] == prefix {
		return path[len(prefix):]
	}
	return ""
}

// confinement is an entry's confinement profile as canonical JSON, so two
// profiles compare by what they say.
func confinement(e resolve.Entry) string {
	if e.Confinement.IsDefault() {
		return ""
	}
	b, err := canonical.Marshal(e.Confinement)
	if err != nil {
		panic("bind: a profile is always encodable: " + err.Error())
	}
	return string(b)
}

// levelChange says in words how the level enforced changed, "" when it
// did not: the guarantees now held, those no longer held, and the seccomp
// filter's version.
func levelChange(was, is *resolve.Enforced) string {
	if was == nil && is == nil {
		return ""
	}
	var w, i resolve.Enforced
	if was != nil {
		w = *was
	}
	if is != nil {
		i = *is
	}
	if slices.Equal(w.Guarantees, i.Guarantees) && w.Filter == i.Filter {
		return ""
	}
	var lost, gained []string
	for _, g := range w.Guarantees {
		if !slices.Contains(i.Guarantees, g) {
			lost = append(lost, g)
		}
	}
	for _, g := range i.Guarantees {
		if !slices.Contains(w.Guarantees, g) {
			gained = append(gained, g)
		}
	}
	d := "holds " + words(i.Guarantees)
	if len(lost) > 0 {
		d += ", no longer holds: " + strings.Join(lost, ", ")
	}
	if len(gained) > 0 {
		d += ", newly holds: " + strings.Join(gained, ", ")
	}
	if w.Filter != i.Filter {
		d += fmt.Sprintf(", seccomp filter %s (was %s)", orNone(i.Filter), orNone(w.Filter))
	}
	return d
}

// words lists guarantees, or says there are none.
func words(names []string) string {
	if len(names) == 0 {
		return "no guarantee"
	}
	return strings.Join(names, ", ")
}

// orNone is a filter version, or "none".
func orNone(v string) string {
	if v == "" {
		return "none"
	}
	return v
}
