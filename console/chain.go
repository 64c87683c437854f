package console

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/oa-dev/oa/admit"
	"github.com/oa-dev/oa/bind"
	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connection"
	"github.com/oa-dev/oa/connector/confine"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/internal/escape"
	"github.com/oa-dev/oa/ledger"
	"github.com/oa-dev/oa/oci"
)

// ChainLink is one link of a deployment's integrity chain as the Chain
// page draws it: it holds (Refusal nil), is broken (Refusal names the
// code oa status, oa bind inspect or oa receipts verify gives), or was
// not checked because a link before it broke.
type ChainLink struct {
	Name    string
	Detail  string
	Refusal *shownRefusal
	// Unchecked is set when a link before it broke and it could not be
	// checked.
	Unchecked bool
	// Rows are the link's parts: the plan's capabilities, the receipts'
	// checkpoint.
	Rows []ChainRow
}

// ChainRow is one part of a link, for a table.
type ChainRow struct {
	Capability, Tool, Connection, Revision, Risk, Approval, Confinement, Level string
}

// Chain is one deployment's integrity chain checked now, link by link:
// artifact → Worker IR → publisher signature → conformance attestations
// → admission (admit.IntegrityOf, as oa status checks it) → plan (the one
// plan check, bind.Check, as oa bind inspect makes it without probing the
// connections) → binding (bind.Current) → receipts with the latest
// checkpoint (ledger.VerifyReceiptsWith, as oa receipts verify). It
// checks nothing itself: every verdict is the stage's own.
type Chain struct {
	Deployment string
	Links      []ChainLink
	// OK is whether every link holds.
	OK bool
}

// CheckChain checks deployment's chain on h now, reading the bound
// release through registry.
func CheckChain(ctx context.Context, h *host.Host, deployment string, registry oci.OpenOptions, now time.Time) (*Chain, error) {
	c := &Chain{Deployment: deployment}
	link := func(name, detail string, err error) (*ChainLink, error) {
		l := ChainLink{Name: name, Detail: detail}
		if err != nil {
			refusals := blocking.Refusals(err)
			if refusals == nil {
				return nil, err
			}
			r := shownRefusals(refusals)[0]
			l.Refusal = &r
		}
		c.Links = append(c.Links, l)
		return &c.Links[len(c.Links)-1], nil
	}
	unchecked := func(names ...string) {
		for _, n := range names {
			c.Links = append(c.Links, ChainLink{Name: n, Unchecked: true})
		}
	}
	b, bindErr := bind.Current(ctx, h, deployment)
	if bindErr != nil {
		if blocking.Refusals(bindErr) == nil {
			return nil, bindErr
		}
		unchecked("artifact", "worker_ir", "publisher_signature", "conformance_attestations", "admission", "plan")
		if _, err := link("binding", deployment, bindErr); err != nil {
			return nil, err
		}
		unchecked("receipts")
		return c, nil
	}
	rel, err := bind.OpenRelease(ctx, h, b, registry)
	switch {
	case err != nil && blocking.Refusals(err) == nil:
		return nil, err
	case err != nil:
		if _, err := link("artifact", b.ArtifactDigest, err); err != nil {
			return nil, err
		}
		unchecked("worker_ir", "publisher_signature", "conformance_attestations", "admission", "plan")
	default:
		in, err := admit.IntegrityOf(ctx, h, &rel.Release, now)
		if err != nil {
			return nil, err
		}
		for _, l := range in.Links {
			if _, err := link(l.Name, l.Detail, errOf(l.Refusal)); err != nil {
				return nil, err
			}
		}
		report, plan, err := bind.Check(ctx, h, b, rel.Artifact, bind.CheckOptions{Now: now})
		if err != nil {
			return nil, err
		}
		detail := "the live plan is the approved one: " + b.PlanDigest
		if !report.Approved {
			detail = changedLinks(report)
		}
		pl, err := link("plan", detail, report.Err())
		if err != nil {
			return nil, err
		}
		if plan == nil {
			plan = &b.Plan
		}
		levels := levelsOf(ctx, h)
		for _, e := range plan.Capabilities {
			row := ChainRow{Capability: e.CapabilityKey, Tool: e.RuntimeTool, Connection: e.ConnectionID, Revision: fmt.Sprint(e.ConnectionRevision),
				Risk: string(e.Risk), Approval: string(e.Approval), Level: "not confined here (in-process or remote)"}
			if e.Confinement != nil {
				row.Confinement = escape.OneLine(confine.Describe(e.Confinement))
			}
			if e.Enforced != nil {
				row.Level = strings.Join(e.Enforced.Guarantees, ", ")
				if e.Enforced.Filter != "" {
					row.Level += "; seccomp " + e.Enforced.Filter
				}
			}
			if l, ok := levels[e.ConnectionID]; ok && row.Confinement == "" {
				row.Confinement = l
			}
			pl.Rows = append(pl.Rows, row)
		}
	}
	if _, err := link("binding", fmt.Sprintf("binding #%d of plan %s, approved %s", b.Seq, b.PlanDigest, strings.Join(b.Approved, ", ")), nil); err != nil {
		return nil, err
	}
	receipts, err := ledger.Open(h).VerifyReceiptsWith(ctx, ledger.VerifyOptions{})
	if err != nil {
		return nil, err
	}
	detail := fmt.Sprintf("%d receipts of %d runs", receipts.Receipts, receipts.Runs)
	if cp := receipts.Checkpoint; cp != nil {
		detail += fmt.Sprintf("; latest checkpoint #%d at %s, head %s", cp.Seq, cp.At.UTC().Format(time.RFC3339), cp.Head)
	}
	if _, err := link("receipts", detail, receipts.Err()); err != nil {
		return nil, err
	}
	c.OK = !slices.ContainsFunc(c.Links, func(l ChainLink) bool { return l.Refusal != nil || l.Unchecked })
	return c, nil
}

// errOf is a link's refusal as an error (a nil *Error is no error).
func errOf(e *blocking.Error) error {
	if e == nil {
		return nil
	}
	return e
}

// changedLinks names the links a plan check found changed.
func changedLinks(r *bind.Report) string {
	var parts []string
	for _, c := range r.Changes {
		p := string(c.Link)
		if c.Capability != "" {
			p += " (" + c.Capability + ")"
		}
		parts = append(parts, p+": "+c.Detail)
	}
	return strings.Join(parts, "; ")
}

// levelsOf is each connection's confinement in words, by name.
func levelsOf(ctx context.Context, h *host.Host) map[string]string {
	out := map[string]string{}
	listed, err := connection.List(ctx, h)
	if err != nil {
		return out
	}
	for _, l := range listed {
		out[l.Name] = connection.ViewOf(l.Name, l.Record).Confinement
	}
	return out
}

// chainPage is the Chain page: the deployments, and the chain of the one
// chosen.
type chainPage struct {
	Deployments []string
	Chain       *Chain
}

func (s *Server) serveChain(w http.ResponseWriter, r *http.Request, sess *session) {
	deployments, err := bind.Deployments(r.Context(), s.h)
	if err != nil {
		s.refuse(w, r, sess, http.StatusInternalServerError, err)
		return
	}
	page := chainPage{Deployments: deployments}
	name := r.URL.Query().Get("deployment")
	if name == "" && len(deployments) == 1 {
		name = deployments[0]
	}
	if name != "" {
		if !slices.Contains(deployments, name) {
			s.refuse(w, r, sess, http.StatusNotFound, blocking.New(blocking.BindingMissing, "deployment %s", name))
			return
		}
		if page.Chain, err = CheckChain(r.Context(), s.h, name, s.opts.Registry, s.opts.Now()); err != nil {
			s.refuse(w, r, sess, http.StatusInternalServerError, err)
			return
		}
	}
	s.render(w, r, sess, http.StatusOK, "chain", page)
}
