package compiler

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/internal/memlimit"
	"github.com/oa-dev/oa/ir"
)

// Budget bounds one compile: a bundle is CUE, and CUE can be written to
// run for hours (a comprehension over millions of elements) or to need
// any amount of memory (a string doubled thirty times) from a kilobyte of
// source. Neither can be stopped inside the process evaluating it, so
// CompileWithin compiles in a child process held to the budget.
type Budget struct {
	// Time is the wall-clock time the compile may take.
	Time time.Duration
	// Memory is the heap the compiling process may use, in bytes.
	Memory int64
}

// Default compile budget: the examples compile in well under a second and
// 100 MiB.
const (
	DefaultCompileTime   = 60 * time.Second
	DefaultCompileMemory = 1 << 30
)

// WithDefaults fills the zero fields of b with the defaults.
func (b Budget) WithDefaults() Budget {
	if b.Time <= 0 {
		b.Time = DefaultCompileTime
	}
	if b.Memory <= 0 {
		b.Memory = DefaultCompileMemory
	}
	return b
}

// compileWorkerEnv, set in a process's environment, makes this package's
// init compile the folder named on stdin and answer on stdout instead of
// running the program; its value is the memory budget in bytes.
const compileWorkerEnv = "OA_COMPILE_WORKER"

// exitOverMemory is the compile worker's exit status when its watchdog
// ends it.
const exitOverMemory = 3

// maxWorkerAnswer bounds what is read back from a compile worker: the IR
// of a bundle of at most MaxBundleBytes, as JSON, with room to spare.
const maxWorkerAnswer = 64 << 20

func init() {
	if v, ok := os.LookupEnv(compileWorkerEnv); ok {
		os.Exit(serveCompile(v, os.Stdin, os.Stdout))
	}
}

// workerAnswer is a compile worker's answer: the IR, or the refusals, or a
// program fault's text.
type workerAnswer struct {
	IR       []byte        `json:"ir,omitempty"`
	Refusals blocking.List `json:"refusals,omitempty"`
	Fault    string        `json:"fault,omitempty"`
}

// CompileWithin compiles the bundle in dir as Compile does, in a child
// process (this executable started again) held to b: over its time the
// child is killed and the compile refused compile_time_exceeded; over its
// memory it ends itself (or fails an allocation) and the compile is
// refused compile_memory_exceeded. When ctx ends first the child is
// killed and ctx's error returned.
func CompileWithin(ctx context.Context, dir string, b Budget) (*Result, error) {
	b = b.WithDefaults()
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("compiler: cannot find this program to compile in: %w", err)
	}
	cmd := exec.Command(exe)
	cmd.Env = []string{compileWorkerEnv + "=" + strconv.FormatInt(b.Memory, 10)}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stdin = bytes.NewReader([]byte(dir))
	var out limitedBuffer
	out.max = maxWorkerAnswer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("compiler: cannot start the compile: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t := time.NewTimer(b.Time)
	defer t.Stop()
	select {
	case err = <-done:
	case <-t.C:
		_ = cmd.Process.Kill()
		<-done
		return nil, blocking.New(blocking.CompileTimeExceeded, "over %s (--timeout)", b.Time).At(dir, "")
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-done
		return nil, ctx.Err()
	}
	if out.over {
		return nil, errors.New("compiler: the compile answered more than can be an IR")
	}
	if err != nil {
		// Ended by its watchdog, or by an allocation RLIMIT_AS refused (the
		// Go runtime's fatal out of memory): either way, over its memory.
		return nil, blocking.New(blocking.CompileMemoryExceeded, "over %d bytes (--max-memory-bytes)", b.Memory).At(dir, "")
	}
	var a workerAnswer
	if err := json.Unmarshal(out.Bytes(), &a); err != nil {
		return nil, fmt.Errorf("compiler: the compile answered something that is not an answer: %w", err)
	}
	switch {
	case a.Fault != "":
		return nil, errors.New(a.Fault)
	case len(a.Refusals) > 0:
		return nil, a.Refusals
	}
	w, err := ir.DecodeCanonical(a.IR)
	if err != nil {
		return nil, fmt.Errorf("compiler: the compile answered IR that does not decode: %w", err)
	}
	return &Result{Worker: w, IR: a.IR, Digest: ir.DigestBytes(a.IR)}, nil
}

// serveCompile is a compile worker's main: it compiles the folder named on
// in under its memory budget and writes one answer to out.
func serveCompile(budget string, in io.Reader, out io.Writer) int {
	memory, err := strconv.ParseInt(budget, 10, 64)
	if err != nil || memory <= 0 {
		memory = DefaultCompileMemory
	}
	memlimit.Hold(memory, exitOverMemory)
	dir, err := io.ReadAll(io.LimitReader(in, 1<<16))
	var a workerAnswer
	if err != nil {
		a.Fault = "compiler: reading the folder to compile: " + err.Error()
	} else if res, err := Compile(string(dir)); err != nil {
		if a.Refusals = blocking.Refusals(err); a.Refusals == nil {
			a.Fault = err.Error()
		}
	} else {
		a.IR = res.IR
	}
	if err := json.NewEncoder(out).Encode(a); err != nil {
		return 1
	}
	return 0
}

// limitedBuffer keeps at most max bytes and notes whether more came.
type limitedBuffer struct {
	bytes.Buffer
	max  int
	over bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > b.max {
		b.over = true
		return 0, errors.New("compiler: answer too long")
	}
	return b.Buffer.Write(p)
}
