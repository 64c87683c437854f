package resolve

import (
	"os"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/confine"
	"github.com/oa-dev/oa/internal/canonical"
	"github.com/oa-dev/oa/internal/memo"
)

// Enforced is the level a confined connection's server is held to on
// this host, as a plan records it: the guarantees held, by name, and the
// seccomp filter's version. It leaves out how each is held (the Landlock
// ABI, a namespace or a filter): a kernel that holds the same guarantees
// another way plans the same, and one that holds fewer changes the plan.
type Enforced struct {
	// Guarantees are the guarantees held, in confine.Guarantees' order.
	Guarantees []string `json:"guarantees"`
	// Filter is the seccomp filter's version; "" where the kernel takes
	// no seccomp filter.
	Filter string `json:"seccomp,omitempty"`
}

// EnforcedOf is what a plan records of level: nil for a level that is
// not confined (unconfined, in-process, no local process), whose
// profile the plan already names.
func EnforcedOf(level confine.Level) *Enforced {
	if level.Mode != confine.ModeConfined {
		return nil
	}
	return &Enforced{Guarantees: append([]string{}, level.Guarantees...), Filter: level.Filter}
}

// levels remembers the level of a start of each configuration on this
// host, by what it depends on that can change within a process: the
// profile, whether a local program is started, and the Landlock ABI cap
// (confine.ABIMaxEnv). The kernel, oa's capabilities and seccomp do not
// change while it runs. A plan is resolved before every step; this keeps
// the kernel from being asked each time.
var levels = memo.Bounded[enforcement]{Max: 1024}

// enforcement is one remembered answer of connector.Enforcement.
type enforcement struct {
	level confine.Level
	err   *blocking.Error
}

// Enforcement is connector.Enforcement, remembered (see levels): the
// level a start of cfg's server is enforced with on this host, or the
// refusal (confinement_unavailable) when it cannot be confined.
func Enforcement(cfg connector.Config) (confine.Level, error) {
	kind := "process"
	switch {
	case cfg.Kind() == connector.KindSandbox:
		kind = "sandbox"
	case cfg.Command == "":
		kind = "none"
	}
	profile, err := canonical.Marshal(cfg.Confinement)
	if err != nil {
		return confine.Level{}, err
	}
	abiCap, _ := os.LookupEnv(confine.ABIMaxEnv)
	id := memo.IDOf([]byte(kind), profile, []byte(abiCap))
	if e, ok := levels.Get(id); ok {
		return e.answer()
	}
	level, err := connector.Enforcement(cfg)
	e := enforcement{level: level}
	if err != nil {
		r := blocking.Refusals(err)
		if len(r) != 1 {
			return confine.Level{}, err // not a refusal: never remembered
		}
		e.err = r[0]
	}
	levels.Put(id, e)
	return e.answer()
}

// answer is the remembered answer, its refusal a copy of its own for
// the caller to locate.
func (e enforcement) answer() (confine.Level, error) {
	if e.err != nil {
		c := *e.err
		return confine.Level{}, &c
	}
	return e.level, nil
}
