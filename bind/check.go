package bind

import (
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/oa-dev/oa/admit"
	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector/confine"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/internal/store"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/resolve"
)

// CheckOptions are the settings of Check.
type CheckOptions struct {
	// Now is the time the admission must be active at.
	Now time.Time
	// Model, when set, checks the plan as if the deployment ran this
	// model instead of the bound one.
	Model string
	// Live, when set, checks the recomputed plan's connections live (oa
	// bind inspect passes resolve.CheckLive); its refusals are changed
	// links. The coordinator checks each downstream tool list itself, on
	// the session it calls through, so it passes nil.
	Live func(ctx context.Context, st *resolve.State, plan *resolve.Plan) error
}

// Check is the one plan check: it recomputes the deployment's plan from
// this host's live state for the bound release art (already fetched and
// verified) and compares it with the binding. `oa bind inspect` and the
// coordinator (at session start, at the start of every run and before
// every step that reaches a downstream server) both call it, so they
// cannot disagree.
//
// The release must be the bound artifact and be actively admitted now
// with the Worker IR it carries; the state (admission record, policy,
// signed registry, connections, projection) is resolved with all nine
// proofs and the plan digest held to the bound one. Every refusal is in
// the Report (Refusals, Changes); the error is for program faults only.
func Check(ctx context.Context, h *host.Host, b *Binding, art *oci.Artifact, opts CheckOptions) (*Report, *resolve.Plan, error) {
	c, err := check(ctx, h, b, art, opts)
	return c.report, c.plan, err
}

// checked is what check found: the report, the plan resolved now (nil
// when the check stopped before resolving) and the admission status it
// relied on (nil unless the release is actively admitted).
type checked struct {
	report *Report
	plan   *resolve.Plan
	status *admit.Status
}

// check is Check, also returning the admission status it relied on.
func check(ctx context.Context, h *host.Host, b *Binding, art *oci.Artifact, opts CheckOptions) (checked, error) {
	digest := art.Descriptor.Digest.String()
	if digest != b.ArtifactDigest {
		r := Compare(b, nil, blocking.New(blocking.AdmissionMismatched, "the bound reference no longer names the bound artifact"))
		return checked{report: r}, nil
	}
	// The admission status and the host state are read at the same time:
	// LoadFor reads nothing that depends on the status, whose record
	// digest is only copied into the state once the release is known to
	// be actively admitted. Nothing is resolved before that.
	type loaded struct {
		st  *resolve.State
		err error
	}
	load := make(chan loaded, 1)
	go func() {
		st, err := resolve.LoadFor(ctx, h, art, "")
		load <- loaded{st, err}
	}()
	status, err := admit.StatusOf(ctx, h, digest, opts.Now)
	l := <-load // always waited for: no read outlives the check
	if err != nil {
		return checked{}, err
	}
	if status.State != admit.Active {
		r := Compare(b, nil, blocking.List{blocking.New(blocking.AdmissionNotActive, "the release is %s", status.State), status.Why})
		return checked{report: r}, nil
	}
	if art.IRDigest != status.Record.WorkerIRDigest {
		r := Compare(b, nil, blocking.New(blocking.AdmissionMismatched, "the artifact's Worker IR is not the one admitted"))
		return checked{report: r}, nil
	}
	model := b.Model
	if opts.Model != "" {
		model = opts.Model
	}
	st, err := l.st, l.err
	var plan *resolve.Plan
	if err == nil {
		st.AdmissionDigest = status.RecordDigest
		plan, err = resolve.Resolve(st, resolve.Request{Deployment: b.Deployment, Model: model, Type: b.Plan.Type})
	}
	if err == nil && opts.Live != nil {
		err = opts.Live(ctx, st, plan)
	}
	if err != nil && blocking.Refusals(err) == nil {
		return checked{}, err
	}
	if err != nil {
		plan = nil
	}
	return checked{report: Compare(b, plan, err), plan: plan, status: status}, nil
}

// NotAdmitted reports whether the plan failed because the release is not
// actively admitted (revoked, expired, replaced, missing, unverifiable).
func (r *Report) NotAdmitted() bool {
	for _, ref := range r.Refusals {
		if ref.Code == blocking.AdmissionNotActive {
			return true
		}
	}
	return false
}

// Checker makes the one plan check again and again for one binding (the
// coordinator holds one per session). An approved check is remembered
// with the signed inputs it read: the stamp of the store's signed tables
// (any admission, revocation, connection version, registry signature or
// binding written by any process changes it) and the sha256 of the
// registry file's bytes. A later check whose inputs are unchanged, at a
// time before the admission expires, is the same check and answers from
// memory; any change recomputes everything. Only approvals are
// remembered, so a refusal is always recomputed.
type Checker struct {
	h   *host.Host
	b   *Binding
	art *oci.Artifact

	mu   sync.Mutex
	last *approvedCheck
	// policyBytes is the sha256 of the policy file's bytes last loaded,
	// and policySame whether they held the host's policy.
	policyBytes *[sha256.Size]byte
	policySame  bool
	// files hashes the registry and policy files, again only when they
	// changed (filedigest.go).
	files fileDigests
}

type approvedCheck struct {
	inputs  checkInputs
	expires time.Time
	report  *Report
	plan    *resolve.Plan
}

// checkInputs are the signed inputs of a plan check that can change
// while a process runs (the policy, host key and release are fixed for
// the life of a *host.Host and an artifact).
type checkInputs struct {
	stamp    store.Stamp
	registry [sha256.Size]byte
	readable bool
	// policy is the sha256 of the policy file's bytes now: the host's
	// policy was read once, when it was opened, and a policy narrowed
	// since must stop the session's effects as it stops `oa bind inspect`.
	policy [sha256.Size]byte
	// abiCap is the Landlock ABI cap (confine.ABIMaxEnv), the one input
	// of the level a plan records that can change while a process runs.
	abiCap string
}

// NewChecker returns the checker of binding b for release art on h.
func NewChecker(h *host.Host, b *Binding, art *oci.Artifact) *Checker {
	return &Checker{h: h, b: b, art: art}
}

// Check is Check(ctx, h, b, art, {Now: now}), answered from memory when
// no signed input changed since an approved check.
func (k *Checker) Check(ctx context.Context, now time.Time) (*Report, *resolve.Plan, error) {
	// The inputs are read before the check, so a change made during it
	// leaves a stamp other than the one remembered: the next check
	// recomputes.
	in, err := k.inputs(ctx)
	if err != nil {
		return nil, nil, err
	}
	k.mu.Lock()
	last := k.last
	k.mu.Unlock()
	if last != nil && last.inputs == in && now.Before(last.expires) {
		return last.report, last.plan, nil
	}
	if r, err := k.policyChanged(in); err != nil || r != nil {
		return r, nil, err
	}
	c, err := check(ctx, k.h, k.b, k.art, CheckOptions{Now: now})
	if err != nil {
		return nil, nil, err
	}
	r, plan, status := c.report, c.plan, c.status
	k.mu.Lock()
	if r.Approved && in.readable {
		k.last = &approvedCheck{inputs: in, expires: status.Record.ExpiresAt, report: r, plan: plan}
	} else {
		k.last = nil
	}
	k.mu.Unlock()
	return r, plan, nil
}

// inputs reads the stamp of the signed tables and hashes the registry.
func (k *Checker) inputs(ctx context.Context) (checkInputs, error) {
	stamp, err := k.h.SignedStamp(ctx)
	if err != nil {
		return checkInputs{}, err
	}
	in := checkInputs{stamp: stamp, abiCap: os.Getenv(confine.ABIMaxEnv)}
	in.registry, in.readable = k.files.digest(filepath.Join(k.h.Home, resolve.RegistryFile))
	var policyReadable bool
	in.policy, policyReadable = k.files.digest(filepath.Join(k.h.Home, host.PolicyFile))
	in.readable = in.readable && policyReadable
	return in, nil
}

// policyChanged answers a check whose policy file no longer holds the
// policy the host was opened with: nil when it does. The policy is loaded
// again only when the file's bytes changed since the last load; a file
// that no longer loads is a changed policy too.
func (k *Checker) policyChanged(in checkInputs) (*Report, error) {
	k.mu.Lock()
	known, same := k.policyBytes, k.policySame
	k.mu.Unlock()
	if known == nil || *known != in.policy {
		p, err := host.LoadPolicy(filepath.Join(k.h.Home, host.PolicyFile))
		same = err == nil && p.Digest() == k.h.Policy.Digest()
		if err != nil && blocking.Refusals(err) == nil {
			return nil, err
		}
		k.mu.Lock()
		k.policyBytes, k.policySame = &in.policy, same
		k.mu.Unlock()
	}
	if same {
		return nil, nil
	}
	return Compare(k.b, nil, blocking.List{
		blocking.New(blocking.AdmissionNotActive, "the release is %s", admit.Mismatched),
		blocking.New(blocking.AdmissionMismatched, "the host policy (%s) changed since this session started", host.PolicyFile),
	}), nil
}
