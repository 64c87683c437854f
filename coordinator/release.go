package coordinator

import (
	"context"
	"fmt"
	"strings"

	"github.com/oa-dev/oa/bind"
	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/oci"
)

// openRelease reads the bound release, from the host's release store
// with no network when its copy checks (bind.OpenRelease). When the
// bound reference had to be read instead, the operator is told why, in
// codes only, and whether the store was filled again.
func (ss *boundSession) openRelease(ctx context.Context) (*oci.Artifact, error) {
	rel, err := bind.OpenRelease(ctx, ss.host, ss.binding, ss.opts.Registry)
	if err != nil {
		return nil, err
	}
	if !rel.FromStore {
		fmt.Fprintf(ss.opts.Operator, "oa coordinator: deployment %s: the release was read from its bound reference, not the host's release store (%s); %s\n",
			ss.opts.Deployment, codesOf(rel.StoreProblem), refilled(rel.RefillProblem))
	}
	return rel.Artifact, nil
}

// codesOf names err's refusal codes, or "a fault" when it has none.
func codesOf(err error) string {
	refused := blocking.Refusals(err)
	if len(refused) == 0 {
		return "a fault"
	}
	codes := make([]string, len(refused))
	for i, r := range refused {
		codes[i] = string(r.Code)
	}
	return strings.Join(codes, ", ")
}

// refilled says whether the release store was filled again.
func refilled(problem error) string {
	if problem == nil {
		return "the store holds it again"
	}
	return "the store could not be filled (" + codesOf(problem) + ")"
}
