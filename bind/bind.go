// Package bind records a person's approval of one execution plan for one
// deployment, and checks later that the plan recomputed from live host
// state is still exactly the approved one.
//
// A binding is signed with the host key and stored as a new version of the
// deployment: plan digest and the whole plan, the deployment, persona,
// session policy, model, the connection set with revisions, who approved
// and when. A consequential capability never binds without an explicit
// approval.
//
// Check is the one plan check: for the bound release it reads the admission
// status and host state (resolve.LoadFor), requires the bound artifact
// actively admitted, resolves (nine proofs), optionally checks connections
// live, and compares the live plan with the binding (Compare, a Report naming
// each changed link: admission, artifact, policy, registry, persona, model,
// connection, connection_revision, confinement, tool_inventory,
// capabilities). `oa bind inspect` and the coordinator both call it, so they
// cannot disagree. Checker repeats it for one session, remembering an
// approved check with its signed inputs until one changes or the admission
// expires; refusals are never remembered.
//
// A bound release is kept in the host's release store ($OA_HOME/releases,
// kept.go) at bind time (BindKept), and OpenRelease reads it from there
// first, with no network, every blob checked against the binding; the
// bound reference is read (and the store refilled) only when the kept
// copy is missing or damaged. A binding's reference is parsed once, where
// the binding is made or loaded, into the oci.Ref its reads use.
//
// ResolveAndBind is the whole step from a release to a binding
// (resolve.Compute, then the request's Gate, then Bind), used by
// pipeline.PrepareHost and fleet.Provision; it lives here, not in pipeline,
// so that provisioning does not load the compiler.
package bind

import (
	"context"
	"regexp"
	"strings"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/internal/store"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/resolve"
)

// RecordType is the type of a binding record.
const RecordType = "oa.binding/v1"

// Binding is one approved plan for one deployment.
type Binding struct {
	Type       string `json:"type"`
	Host       string `json:"host"`
	Deployment string `json:"deployment"`
	Seq        int64  `json:"seq"`
	// Reference is where the release is read from: a digest reference,
	// an OCI layout path when LayoutPath is set.
	Reference      string        `json:"reference"`
	LayoutPath     bool          `json:"layoutPath"`
	ArtifactDigest string        `json:"artifactDigest"`
	PlanDigest     string        `json:"planDigest"`
	Plan           resolve.Plan  `json:"plan"`
	PersonaDigest  string        `json:"personaDigest"`
	SessionPolicy  SessionPolicy `json:"sessionPolicy"`
	Model          string        `json:"model"`
	// Connections is the connection set with the revisions approved.
	Connections []ConnectionRef `json:"connections"`
	// Approved lists the consequential capabilities the person approved.
	Approved   []string  `json:"approved"`
	ApprovedBy string    `json:"approvedBy"`
	OSAccount  string    `json:"osAccount"`
	ApprovedAt time.Time `json:"approvedAt"`

	// release is Reference read under the host's home: parsed once, where
	// the binding is made or loaded (parseRelease), not again by each
	// read of the release. releaseErr is why it did not parse; it is
	// returned by the reads of the release (OpenRelease), not by the load,
	// so that the rest of a binding is still shown.
	release    oci.Ref
	releaseErr error
}

// parseRelease reads b's Reference (a layout path when LayoutPath is set)
// under home, once, for the reads of the release that follow.
func (b *Binding) parseRelease(home string) {
	b.release, b.releaseErr = oci.ParseRef(b.Reference, oci.RefOptions{Home: home, Layout: b.LayoutPath})
}

// SessionPolicy is how the coordinator serves the deployment.
type SessionPolicy struct {
	// WaitSecondsDefault and WaitSecondsMax bound run_workflow's wait.
	WaitSecondsDefault int `json:"waitSecondsDefault"`
	WaitSecondsMax     int `json:"waitSecondsMax"`
	// Approvals is who may approve a paused consequential step: always a
	// person, through MCP form elicitation or the oa CLI.
	Approvals string `json:"approvals"`
}

// DefaultSessionPolicy is the session policy of a new binding.
var DefaultSessionPolicy = SessionPolicy{WaitSecondsDefault: 60, WaitSecondsMax: 600, Approvals: "person"}

// ConnectionRef is one connection at one revision.
type ConnectionRef struct {
	ID              string `json:"id"`
	Revision        int64  `json:"revision"`
	AuthorityDigest string `json:"authorityDigest"`
}

// Approval is a person's answer to the plan shown to them.
type Approval struct {
	By string
	// Approved is true only after an explicit confirmation (a terminal
	// prompt answered yes, or --yes).
	Approved bool
	Now      time.Time
}

var (
	deploymentPattern = regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)*$`)
	// modelPattern is the model name rule but for its length (at most
	// maxModel), checked apart: a counted repetition compiles into one
	// copy of the class per place, paid by every oa process at start.
	modelPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/-]*$`)
)

// maxModel is the longest model name.
const maxModel = 128

// CheckNames refuses a malformed deployment or model name.
func CheckNames(deployment, model string) error {
	var refused blocking.List
	if !deploymentPattern.MatchString(deployment) || len(deployment) > 63 {
		refused = append(refused, blocking.New(blocking.DeploymentInvalid, "the deployment name breaks the naming rule").At("", "deployment"))
	}
	if len(model) > maxModel || !modelPattern.MatchString(model) {
		refused = append(refused, blocking.New(blocking.DeploymentInvalid, "the model name breaks the naming rule").At("", "model"))
	}
	return refused.Err()
}

// Bind signs and stores plan as the deployment's binding, if a person
// approved it. reference is the digest reference of the release. The
// release is not kept in the host's release store (BindKept does that):
// it is kept on the binding's first read of it (OpenRelease).
func Bind(ctx context.Context, h *host.Host, reference string, layoutPath bool, plan *resolve.Plan, a Approval) (*Binding, error) {
	return bind(ctx, h, reference, layoutPath, plan, a, nil)
}

// bind is Bind, calling keep (when not nil) after every check and before
// the binding is written: a refusal keeps nothing, and a failed keep
// binds nothing.
func bind(ctx context.Context, h *host.Host, reference string, layoutPath bool, plan *resolve.Plan, a Approval, keep func() error) (*Binding, error) {
	if err := host.CheckPerson(a.By, "the binding"); err != nil {
		return nil, err
	}
	if err := CheckNames(plan.Deployment, plan.Model); err != nil {
		return nil, err
	}
	consequential := plan.Consequential()
	if !a.Approved {
		if len(consequential) > 0 {
			return nil, blocking.New(blocking.ConsequentialNotApproved, "consequential capabilities %s need an explicit approval", strings.Join(consequential, ", "))
		}
		return nil, blocking.New(blocking.BindNotApproved, "no approval was given")
	}
	b := &Binding{
		Type: RecordType, Host: h.Policy.Host, Deployment: plan.Deployment, Reference: reference, LayoutPath: layoutPath,
		ArtifactDigest: plan.ArtifactDigest, PlanDigest: plan.Digest(), Plan: *plan,
		PersonaDigest: plan.PersonaDigest, SessionPolicy: DefaultSessionPolicy, Model: plan.Model,
		Connections: connectionSet(plan), Approved: append([]string{}, consequential...),
		ApprovedBy: a.By, OSAccount: host.OSAccount(), ApprovedAt: a.Now.UTC().Truncate(time.Second),
	}
	b.parseRelease(h.Home)
	if err := h.PrepareSigner(); err != nil {
		return nil, err
	}
	if keep != nil {
		if err := keep(); err != nil {
			return nil, err
		}
	}
	_, err := h.Versions().Insert(ctx, store.KindBinding, plan.Deployment, func(seq int64, _ *store.Version) ([]byte, []byte, error) {
		b.Seq = seq
		return h.SignRecord(b)
	})
	if err != nil {
		return nil, err
	}
	return b, nil
}

// connectionSet lists each connection of the plan once, in plan order.
func connectionSet(plan *resolve.Plan) []ConnectionRef {
	seen := map[string]bool{}
	out := []ConnectionRef{}
	for _, e := range plan.Capabilities {
		if !seen[e.ConnectionID] {
			seen[e.ConnectionID] = true
			out = append(out, ConnectionRef{e.ConnectionID, e.ConnectionRevision, e.AuthorityDigest})
		}
	}
	return out
}

// Current returns the deployment's binding, verified: its signature, and
// that its plan digest is the digest of the plan it carries and every
// consequential capability of that plan was approved.
func Current(ctx context.Context, h *host.Host, deployment string) (*Binding, error) {
	v, err := h.Versions().Latest(ctx, store.KindBinding, deployment)
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, blocking.New(blocking.BindingMissing, "deployment %s", deployment)
	}
	b, err := readVersion(h, v, deployment)
	if err != nil {
		return nil, err
	}
	if missing := unapproved(&b.Plan, b.Approved); len(missing) > 0 {
		return nil, blocking.New(blocking.ConsequentialNotApproved, "binding #%d lacks approval of %s", v.Seq, strings.Join(missing, ", "))
	}
	return b, nil
}

// readVersion verifies one stored binding version of deployment: its host
// signature, and that its plan digest is the digest of the plan it
// carries.
func readVersion(h *host.Host, v *store.Version, deployment string) (*Binding, error) {
	var b Binding
	if err := h.ReadVersion(v, RecordType, &b); err != nil || b.Deployment != deployment || b.Plan.Digest() != b.PlanDigest {
		return nil, blocking.New(blocking.BindingUnverifiable, "deployment %s binding #%d", deployment, v.Seq)
	}
	b.parseRelease(h.Home)
	return &b, nil
}

// unapproved returns the plan's consequential capabilities not in approved.
func unapproved(plan *resolve.Plan, approved []string) []string {
	ok := map[string]bool{}
	for _, k := range approved {
		ok[k] = true
	}
	var out []string
	for _, k := range plan.Consequential() {
		if !ok[k] {
			out = append(out, k)
		}
	}
	return out
}

// FetchRelease is OpenRelease's artifact.
func FetchRelease(ctx context.Context, h *host.Host, b *Binding, transport oci.OpenOptions) (*oci.Artifact, error) {
	r, err := OpenRelease(ctx, h, b, transport)
	if err != nil {
		return nil, err
	}
	return r.Artifact, nil
}
