// Package resolve turns an admitted release's provider-neutral capabilities
// into one exact execution plan on one host: each capability bound to one
// canonical runtime tool of one canonical connector, performed through one
// online, verified connection revision. It proves the nine resolution rules
// of DESIGN.md for every capability, each failure its own blocking code
// naming the capability, and never picks among ambiguous candidates.
//
// The plan lives on the host only. Its digest, the plan digest (planDigest
// in every JSON record that names it, plan_digest in the run record), is
// the sha256 of its canonical JSON (RFC 8785): the same state gives the same
// digest in any process.
//
// LoadRegistry reads the host capability registry against #Registry;
// SignRegistry and CheckRegistrySigned sign and check its exact digest with
// the host key, and SignRegistryFile (`oa registry sign`) signs a file only
// if its bytes did not change while read. Load and LoadFor gather the active
// admission, verified artifact, projection, signed registry and connections
// into a State; Resolve is linear and reads only the State and the level
// this host confines each planned connection's server to (Enforcement,
// remembered per profile and ABI cap), which the plan records so that a
// weaker kernel changes it; CheckLive requires each plan
// connection's live inventory to be the verified one; Compute is Load,
// Resolve and CheckLive.
package resolve

import (
	"github.com/oa-dev/oa/connector/confine"
	"github.com/oa-dev/oa/internal/canonical"
	"github.com/oa-dev/oa/ir"
)

// PlanType is the type of an execution plan: since oa.plan/v2 a plan
// covers the registry entries it uses (RegistryEntries), not the whole
// registry (PlanTypeV1, registryuse.go).
const PlanType = "oa.plan/v2"

// Plan is an execution plan: one entry per capability of the package, and
// the chain of digests above it.
type Plan struct {
	Type       string `json:"type"`
	Host       string `json:"host"`
	Deployment string `json:"deployment"`
	Package    string `json:"package"`
	Version    string `json:"version"`

	ArtifactDigest  string `json:"artifactDigest"`
	WorkerIRDigest  string `json:"workerIrDigest"`
	AdmissionDigest string `json:"admissionDigest"`
	PolicyDigest    string `json:"policyDigest"`
	// RegistryDigest is the whole registry's digest, in an oa.plan/v1
	// plan only (left out of a v2 plan's JSON).
	RegistryDigest string `json:"registryDigest,omitempty"`
	// RegistryEntries are the registry entries the plan uses, by name,
	// each with its digest (oa.plan/v2; left out of a v1 plan's JSON): a
	// registry change that touches none of them leaves the plan as it was.
	RegistryEntries       []RegistryEntry `json:"registryEntries,omitempty"`
	PersonaDigest         string          `json:"personaDigest"`
	SkillDigest           string          `json:"skillDigest"`
	MaterializationDigest string          `json:"materializationDigest"`
	Model                 string          `json:"model"`

	// Capabilities are ordered by capability key.
	Capabilities []Entry `json:"capabilities"`
}

// Entry is how one capability is performed on this host.
type Entry struct {
	CapabilityKey      string      `json:"capabilityKey"`
	RuntimeTool        string      `json:"runtimeTool"`
	Connector          string      `json:"connector"`
	ConnectionID       string      `json:"connectionId"`
	ConnectionRevision int64       `json:"connectionRevision"`
	AuthorityDigest    string      `json:"authorityDigest"`
	InventoryDigest    string      `json:"inventoryDigest"`
	ToolSchemaDigest   string      `json:"toolSchemaDigest"`
	Risk               ir.Risk     `json:"risk"`
	Approval           ir.Approval `json:"approval"`
	// Confinement is the connection's confinement profile; nil (left out
	// of the plan's JSON, so plans made before profiles keep their digest)
	// is the default profile. Loosening it changes the plan.
	Confinement *confine.Profile `json:"confinement,omitempty"`
	// Enforced is the level the connection's server is held to on this
	// host when the plan was resolved: the guarantees held and the
	// seccomp filter's version; nil (left out) for a server that is not
	// confined. A move to a kernel that holds fewer changes the plan.
	Enforced *Enforced `json:"enforced,omitempty"`
}

// Digest is the plan digest (planDigest): the sha256 of the plan's
// canonical JSON.
func (p *Plan) Digest() string {
	b, err := canonical.Marshal(p)
	if err != nil {
		panic("resolve: a plan is always encodable: " + err.Error())
	}
	return ir.DigestBytes(b)
}

// Entry returns the plan's entry for capability key.
func (p *Plan) Entry(key string) (Entry, bool) {
	for _, e := range p.Capabilities {
		if e.CapabilityKey == key {
			return e, true
		}
	}
	return Entry{}, false
}

// Consequential returns the keys of the plan's consequential capabilities,
// the ones a person must approve.
func (p *Plan) Consequential() []string {
	var out []string
	for _, e := range p.Capabilities {
		if e.Risk == ir.Consequential {
			out = append(out, e.CapabilityKey)
		}
	}
	return out
}
