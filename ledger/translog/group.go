package translog

import "golang.org/x/mod/sumdb/note"

// Group is a c2sp.org/tlog-policy quorum rule: it is satisfied when at
// least Threshold of its members are, a member being a witness (its key
// cosigned) or another group (nested, as a policy's group lines name
// groups defined above them). A policy's "quorum NAME" is one Group;
// a flat "N of these witnesses" is a Group of witnesses alone.
type Group struct {
	Name      string
	Threshold int
	Witnesses []note.Verifier
	Groups    []*Group
}

// Satisfied reports whether the witnesses cosigned (by cosigned, which
// says whether a key's cosignature verified) meet the group.
func (g *Group) Satisfied(cosigned func(note.Verifier) bool) bool {
	return g.satisfied(cosigned, 0)
}

// maxGroupDepth bounds nesting: a policy's groups name only groups
// defined before them, so there are no cycles, but a Group built by hand
// could hold one.
const maxGroupDepth = 64

func (g *Group) satisfied(cosigned func(note.Verifier) bool, depth int) bool {
	if g == nil || depth > maxGroupDepth {
		return false
	}
	n := 0
	for _, w := range g.Witnesses {
		if cosigned(w) {
			n++
		}
	}
	for _, sub := range g.Groups {
		if n >= g.Threshold {
			break
		}
		if sub.satisfied(cosigned, depth+1) {
			n++
		}
	}
	return n >= g.Threshold
}

// Least is the fewest witnesses whose cosignatures satisfy the group:
// what a flat count (a fleet document's quorum, a report) says of it.
func (g *Group) Least() int { return g.least(0) }

func (g *Group) least(depth int) int {
	if g == nil || depth > maxGroupDepth {
		return 0
	}
	costs := make([]int, 0, len(g.Witnesses)+len(g.Groups))
	for range g.Witnesses {
		costs = append(costs, 1)
	}
	for _, sub := range g.Groups {
		costs = append(costs, sub.least(depth+1))
	}
	// The cheapest Threshold members (members may share witnesses in
	// nested groups; this is the count when they do not).
	for i := 1; i < len(costs); i++ {
		for j := i; j > 0 && costs[j] < costs[j-1]; j-- {
			costs[j], costs[j-1] = costs[j-1], costs[j]
		}
	}
	total := 0
	for i := 0; i < g.Threshold && i < len(costs); i++ {
		total += costs[i]
	}
	return total
}
