package component

import (
	"errors"
	"time"
)

// Budget bounds one evaluation of a component at run time: how long it
// may take and how much memory the process evaluating it may use. A host
// sets it in its policy's limits section (evaluation_ms,
// evaluation_bytes); a zero field keeps its default.
type Budget struct {
	// Time is the CPU time one evaluation may take (a worker that gets no
	// CPU is waited for up to ten times as long in wall-clock time).
	Time time.Duration
	// Memory is the heap the evaluating process may use, in bytes.
	Memory int64
}

// Default budget of one evaluation: far above what any evaluator of a
// real workflow needs (the clinic example's take well under a
// millisecond and a few hundred KiB), far below what stalls a host.
const (
	DefaultEvaluationTime   = 2 * time.Second
	DefaultEvaluationMemory = 256 << 20
)

// WithDefaults fills the zero fields of b with the defaults.
func (b Budget) WithDefaults() Budget {
	if b.Time <= 0 {
		b.Time = DefaultEvaluationTime
	}
	if b.Memory <= 0 {
		b.Memory = DefaultEvaluationMemory
	}
	return b
}

// ErrOverBudget is wrapped by the error of an evaluation stopped by its
// budget: ErrOverTime or ErrOverMemory.
var ErrOverBudget = errors.New("component: evaluation over budget")

// ErrOverTime and ErrOverMemory say which part of the budget an
// evaluation went over; both wrap ErrOverBudget.
var (
	ErrOverTime   = overBudget("time")
	ErrOverMemory = overBudget("memory")
)

type budgetError struct{ what string }

func overBudget(what string) error { return &budgetError{what} }

func (e *budgetError) Error() string {
	return "component: evaluation over its " + e.what + " budget"
}

func (e *budgetError) Unwrap() error { return ErrOverBudget }
