package component

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/oa-dev/oa/internal/memlimit"
	"github.com/oa-dev/oa/internal/memo"
)

// Why evaluation runs in worker processes (docs/DESIGN.md, "Evaluation
// budget"): CUE evaluation (cuelang.org/go v0.17.1) cannot be cancelled
// from outside — nothing in the evaluator takes a context or checks a
// flag — and one comprehension over an input-sized list can run for hours
// and allocate without bound. A goroutine that is abandoned keeps its CPU
// and memory until it ends, and it may never end. A process can be ended:
// each evaluation runs in a worker process (this same executable, started
// again with workerEnv set) whose memory is bounded from inside (a Go
// memory limit, a watchdog over the heap, and RLIMIT_AS as the backstop)
// and whose time is bounded from outside (the Pool kills it when the
// budget's time is spent or the caller's context ends). Workers are kept
// and reused, each evaluating one thing at a time with its own CUE
// context and its own cache of compiled components, so evaluations of
// different runs never wait on each other while a worker is free.

// workerEnv, set in a process's environment, makes this package's init
// serve evaluations on stdin/stdout instead of running the program. Its
// value is the memory budget in bytes.
const workerEnv = "OA_COMPONENT_WORKER"

func init() {
	if v, ok := os.LookupEnv(workerEnv); ok {
		os.Exit(serveWorker(v, os.Stdin, os.Stdout))
	}
}

// MaxAnswerBytes bounds one answer a worker sends back (an evaluator's
// arguments or predicate value, as JSON); a bigger one is refused as over
// budget.
const MaxAnswerBytes = 16 << 20

// request is one evaluation sent to a worker.
type request struct {
	// CPU is the CPU time the evaluation may use, in nanoseconds.
	CPU    int64           `json:"cpu"`
	Source string          `json:"source"`
	Input  json.RawMessage `json:"input,omitempty"`
	Steps  json.RawMessage `json:"steps,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
}

// answer is a worker's reply: the value, or the evaluation's error text.
type answer struct {
	Out   json.RawMessage `json:"out,omitempty"`
	Error string          `json:"error,omitempty"`
}

// Pool evaluates components in worker processes under a budget. It is
// safe for concurrent use; each Eval has a worker of its own.
type Pool struct {
	budget Budget
	exe    string
	max    int

	// refers remembers which values in scope each source refers to
	// (usesOf), so what a source never reads is not sent to a worker; at
	// most maxKnownSources of them (a host has a few dozen).
	refers  sync.Map
	sources atomic.Int64
	// done remembers recent values (memo.go).
	done memo.Bounded[json.RawMessage]

	mu     sync.Mutex
	idle   []*worker
	live   int
	closed bool
	free   chan struct{} // a worker was returned or ended
}

// NewPool returns a pool whose evaluations are held to b (zero fields
// default). Workers are started on demand, at most max(4, 2×GOMAXPROCS)
// at once; a further evaluation waits for one.
func NewPool(b Budget) (*Pool, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("component: cannot find this program to start evaluation workers: %w", err)
	}
	return &Pool{budget: b.WithDefaults(), exe: exe, max: max(4, 2*runtime.GOMAXPROCS(0)), free: make(chan struct{}, 1), done: memo.Bounded[json.RawMessage]{Max: maxMemo}}, nil
}

// Budget is the budget every evaluation of p is held to.
func (p *Pool) Budget() Budget { return p.budget }

// Eval evaluates source as Evaluator.Eval does, in a worker process. An
// evaluation over the budget's time is ended with its worker and fails
// with ErrOverTime; a worker that goes over the memory budget (or dies in
// any other way while evaluating) fails it with ErrOverMemory. When ctx
// ends first the worker is ended too and ctx's error returned.
func (p *Pool) Eval(ctx context.Context, source string, input, steps, result json.RawMessage) (json.RawMessage, error) {
	return p.EvalAhead(ctx, source, input, steps, result, nil)
}

// EvalAhead is Eval, and then, on the same worker and after the answer
// is returned, evaluates each of ahead that refers to the input alone
// (not to steps or result) with input, remembering its value for a later
// Eval: a run's arguments that depend only on its inputs cost one worker
// round trip together instead of one each. What is evaluated ahead
// changes nothing about the answer, and its failures are not remembered:
// an evaluation ahead that fails or goes over budget ends only that
// worker, and is evaluated again, and fails as it should, when asked for.
func (p *Pool) EvalAhead(ctx context.Context, source string, input, steps, result json.RawMessage, ahead []string) (json.RawMessage, error) {
	req := request{CPU: int64(p.budget.Time), Source: source, Input: input, Steps: steps, Result: result}
	p.omitUnused(&req)
	key := req.key()
	if v, ok := p.done.Get(key); ok {
		return slices.Clone(v), nil
	}
	later := p.aheadOf(input, key, ahead)
	w, err := p.get(ctx)
	if err != nil {
		return nil, err
	}
	a, err := w.eval(ctx, req, later, wallCap(p.budget.Time))
	if err != nil {
		p.end(w)
		return nil, err
	}
	if len(later) > 0 {
		go p.rememberAhead(w, later)
	} else {
		p.put(w)
	}
	if a.Error != "" {
		return nil, &EvalError{Message: a.Error}
	}
	p.done.Put(key, slices.Clone(a.Out))
	return a.Out, nil
}

// aheadOf is the requests of the sources of ahead that refer to the input
// alone and whose values are not remembered yet, each once, never the
// evaluation of key itself.
func (p *Pool) aheadOf(input json.RawMessage, key memo.ID, ahead []string) []request {
	if len(ahead) == 0 || !json.Valid(input) {
		return nil
	}
	var out []request
	seen := map[memo.ID]bool{key: true}
	for _, source := range ahead {
		if u := p.usesOf(source); u.Steps || u.Result {
			continue
		}
		req := request{CPU: int64(p.budget.Time), Source: source, Input: input}
		p.omitUnused(&req)
		k := req.key()
		if _, known := p.done.Get(k); known || seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, req)
	}
	return out
}

// rememberAhead reads the answers of the evaluations ahead sent with a
// request on w, remembers the values, and returns w to the pool.
func (p *Pool) rememberAhead(w *worker, ahead []request) {
	for _, req := range ahead {
		a, err := w.answer(context.Background(), wallCap(p.budget.Time))
		if err != nil {
			p.end(w)
			return
		}
		if a.Error == "" {
			p.done.Put(req.key(), slices.Clone(a.Out))
		}
	}
	p.put(w)
}

// omitUnused leaves out of req the values its source never refers to:
// filled or not, they cannot change its answer, and sending them costs an
// encoding, a pipe and a decoding (a step's result can be a whole record).
// One that is not JSON is still sent, to be refused as before.
func (p *Pool) omitUnused(req *request) {
	u := p.usesOf(req.Source)
	for _, f := range []struct {
		value *json.RawMessage
		used  bool
	}{{&req.Input, u.Input}, {&req.Steps, u.Steps}, {&req.Result, u.Result}} {
		if !f.used && *f.value != nil && json.Valid(*f.value) {
			*f.value = nil
		}
	}
}

// usesOf is which values in scope source refers to, remembered.
func (p *Pool) usesOf(source string) uses {
	if known, ok := p.refers.Load(source); ok {
		return known.(uses)
	}
	u := usesOf(source)
	if p.sources.Add(1) <= maxKnownSources {
		p.refers.Store(source, u)
	}
	return u
}

// maxKnownSources bounds the sources a Pool remembers what they refer to.
const maxKnownSources = 4096

// EvalError is an evaluation that did not give a concrete value of its
// kind. Message is CUE's about the expression: it can quote values, so it
// is never shown to a calling agent.
type EvalError struct{ Message string }

func (e *EvalError) Error() string { return "component: " + e.Message }

// wallCap is how long the pool waits for an evaluation whose worker gets
// too little CPU to spend its budget (a host under load): the budget's time
// is CPU time, enforced by the worker itself, so a busy host does not turn
// an ordinary evaluation into one over budget; the wall-clock cap only
// ends a worker that is stuck.
func wallCap(cpu time.Duration) time.Duration { return max(10*cpu, cpu+10*time.Second) }

// Close ends every worker; evaluations under way fail.
func (p *Pool) Close() {
	p.mu.Lock()
	p.closed = true
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, w := range idle {
		w.kill()
	}
}

var errPoolClosed = errors.New("component: the evaluation pool is closed")

// get returns an idle worker, a new one when fewer than max run, or waits
// for one to be returned.
func (p *Pool) get(ctx context.Context) (*worker, error) {
	for {
		p.mu.Lock()
		switch {
		case p.closed:
			p.mu.Unlock()
			return nil, errPoolClosed
		case len(p.idle) > 0:
			w := p.idle[len(p.idle)-1]
			p.idle = p.idle[:len(p.idle)-1]
			p.mu.Unlock()
			return w, nil
		case p.live < p.max:
			p.live++
			p.mu.Unlock()
			w, err := startWorker(p.exe, p.budget.Memory)
			if err != nil {
				p.mu.Lock()
				p.live--
				p.mu.Unlock()
				p.signal()
				return nil, err
			}
			return w, nil
		}
		p.mu.Unlock()
		select {
		case <-p.free:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// put returns a worker for reuse.
func (p *Pool) put(w *worker) {
	p.mu.Lock()
	if p.closed {
		p.live--
		p.mu.Unlock()
		w.kill()
		return
	}
	p.idle = append(p.idle, w)
	p.mu.Unlock()
	p.signal()
}

// end ends a worker that failed or was stopped.
func (p *Pool) end(w *worker) {
	w.kill()
	p.mu.Lock()
	p.live--
	p.mu.Unlock()
	p.signal()
}

func (p *Pool) signal() {
	select {
	case p.free <- struct{}{}:
	default:
	}
}

// worker is one evaluation process.
type worker struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Scanner
	gone chan struct{} // closed once the process has been waited for
}

// startWorker starts this executable as a worker with a memory budget. The
// kernel ends it if this process dies (Pdeathsig); it inherits no
// environment but its budget, and its stderr is discarded (a worker that
// runs out of memory writes the Go runtime's report there).
func startWorker(exe string, memory int64) (*worker, error) {
	cmd := exec.Command(exe)
	cmd.Env = []string{workerEnv + "=" + strconv.FormatInt(memory, 10)}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("component: cannot start an evaluation worker: %w", err)
	}
	w := &worker{cmd: cmd, in: in, out: bufio.NewScanner(out), gone: make(chan struct{})}
	w.out.Buffer(make([]byte, 0, 64<<10), MaxAnswerBytes)
	go func() { _ = cmd.Wait(); close(w.gone) }()
	return w, nil
}

// eval sends one request, and the requests of ahead after it, and waits
// for the first one's answer, at most limit; the answers of ahead are
// read after (answer).
func (w *worker) eval(ctx context.Context, req request, ahead []request, limit time.Duration) (answer, error) {
	var lines []byte
	for _, r := range append([]request{req}, ahead...) {
		line, err := json.Marshal(r)
		if err != nil {
			return answer{}, err
		}
		lines = append(append(lines, line...), '\n')
	}
	return w.exchange(ctx, lines, limit)
}

// answer waits for the worker's next answer, at most limit.
func (w *worker) answer(ctx context.Context, limit time.Duration) (answer, error) {
	return w.exchange(ctx, nil, limit)
}

// exchange writes lines to the worker, then reads its next answer, both
// within limit (a worker that stops reading is ended as one that stops
// answering).
func (w *worker) exchange(ctx context.Context, lines []byte, limit time.Duration) (answer, error) {
	type got struct {
		a   answer
		err error
	}
	done := make(chan got, 1)
	go func() {
		if len(lines) > 0 {
			if _, err := w.in.Write(lines); err != nil {
				done <- got{err: ErrOverMemory} // the worker is gone
				return
			}
		}
		if !w.out.Scan() {
			// It died (or answered too much): its exit status says why.
			<-w.gone
			if w.cmd.ProcessState != nil && w.cmd.ProcessState.ExitCode() == exitOverTime {
				done <- got{err: ErrOverTime}
				return
			}
			done <- got{err: ErrOverMemory}
			return
		}
		var a answer
		if err := json.Unmarshal(w.out.Bytes(), &a); err != nil {
			done <- got{err: fmt.Errorf("component: a worker answered something that is not an answer: %w", err)}
			return
		}
		done <- got{a: a}
	}()
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case g := <-done:
		return g.a, g.err
	case <-t.C:
		w.kill()
		return answer{}, ErrOverTime
	case <-ctx.Done():
		w.kill()
		return answer{}, ctx.Err()
	}
}

// kill ends the worker and waits for it.
func (w *worker) kill() {
	_ = w.cmd.Process.Kill()
	_ = w.in.Close()
	<-w.gone
}

// serveWorker is a worker's main: evaluations read as JSON lines from in,
// answered as JSON lines on out, until in ends. It returns the exit
// status.
func serveWorker(budget string, in io.Reader, out io.Writer) int {
	memory, err := strconv.ParseInt(budget, 10, 64)
	if err != nil || memory <= 0 {
		memory = DefaultEvaluationMemory
	}
	memlimit.Limit(memory)
	// One evaluation at a time on one goroutine (CUE's evaluator is
	// sequential): a second P only adds threads spinning for work the
	// worker never has (BenchmarkPoolClinicRun: −15 % of its CPU). The
	// watchdog still runs, preempting an evaluation within 10 ms.
	runtime.GOMAXPROCS(1)
	e := NewEvaluator()
	r := bufio.NewScanner(in)
	r.Buffer(make([]byte, 0, 64<<10), 4*MaxAnswerBytes)
	enc := json.NewEncoder(out)
	for r.Scan() {
		// Watched from the request's decoding to the answer: between
		// evaluations the worker waits on its input and its heap cannot
		// grow, so nothing wakes it there.
		w := startWatch(memory)
		var req request
		var a answer
		if err := json.Unmarshal(r.Bytes(), &req); err != nil {
			a.Error = "the request is not JSON"
		} else {
			w.cpu(time.Duration(req.CPU))
			v, err := e.Eval(req.Source, req.Input, req.Steps, req.Result)
			w.endCPU()
			if err != nil {
				a.Error = err.Error()
			} else {
				a.Out = v
			}
			// A CUE context keeps everything compiled in it, the values
			// filled in included: start a fresh one before what it holds
			// counts against the next evaluation's budget.
			if liveHeapBytes() > memory/4 {
				e = NewEvaluator()
				runtime.GC()
			}
		}
		w.stop()
		if err := enc.Encode(a); err != nil {
			return 1
		}
	}
	return 0
}

// A worker's exit status when its watchdog ends it: over memory, or over
// the CPU time of an evaluation.
const (
	exitOverMemory = 3
	exitOverTime   = 4
)

// watch is a worker's watchdog over one request: it ends the worker
// (exitOverMemory) once the heap passes the memory budget and, while an
// evaluation runs, (exitOverTime) once the process has used more than
// the evaluation's CPU budget since it began. It checks every
// memlimit.Every, so a request answered sooner costs one timer.
type watch struct {
	done  chan struct{}
	start atomic.Int64 // the process's CPU time when the evaluation began
	limit atomic.Int64 // the evaluation's CPU budget; 0 while none runs
}

func startWatch(memory int64) *watch {
	w := &watch{done: make(chan struct{})}
	go func() {
		t := time.NewTicker(memlimit.Every)
		defer t.Stop()
		for {
			select {
			case <-w.done:
				return
			case <-t.C:
				if memlimit.Over(memory) {
					os.Exit(exitOverMemory)
				}
				if limit := w.limit.Load(); limit > 0 && int64(cpuTime())-w.start.Load() > limit {
					os.Exit(exitOverTime)
				}
			}
		}
	}()
	return w
}

// cpu starts holding an evaluation to budget of CPU time (the default
// when budget is not positive); endCPU ends it.
func (w *watch) cpu(budget time.Duration) {
	if budget <= 0 {
		budget = DefaultEvaluationTime
	}
	w.start.Store(int64(cpuTime()))
	w.limit.Store(int64(budget))
}

func (w *watch) endCPU() { w.limit.Store(0) }

// stop ends the watch.
func (w *watch) stop() { close(w.done) }

// liveHeapBytes is the heap found live by the last garbage collection:
// what the worker's CUE context keeps, without the garbage of the last
// evaluations.
func liveHeapBytes() int64 {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(sample[0].Value.Uint64())
}

// cpuTime is the CPU time (user and system) this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
