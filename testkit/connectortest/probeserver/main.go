// Command probeserver is an MCP stdio server for oa's confinement tests.
// Its one tool, probe, tries what a confined server must not do unless
// its profile allows it — read a file, write a file, connect to a TCP
// address — in the server itself and, with child set, in a process the
// server starts (the server's child, oa's grandchild), and answers what
// the kernel said to each attempt.
//
// Run with --attempt JSON it makes the attempts of one probe call and
// prints the outcome as JSON: that is the child.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Attempts are what one probe tries; an empty field is not tried.
type Attempts struct {
	Read    string `json:"read,omitempty" jsonschema:"a file to read"`
	Write   string `json:"write,omitempty" jsonschema:"a file to create and write"`
	Connect string `json:"connect,omitempty" jsonschema:"a TCP address to connect to"`
	UDP     string `json:"udp,omitempty" jsonschema:"a UDP address to send a datagram to"`
	// Unix are paths of unix sockets to connect to.
	Unix  []string `json:"unix,omitempty" jsonschema:"unix socket paths to connect to"`
	Child bool     `json:"child,omitempty" jsonschema:"make the attempts in a child process as well"`
	// Allocate maps this many bytes of anonymous memory (without touching
	// them): what RLIMIT_AS refuses.
	Allocate int64 `json:"allocate,omitempty" jsonschema:"bytes of address space to map"`
	// Files opens /dev/null this many times at once.
	Files int `json:"files,omitempty" jsonschema:"how many files to hold open at once"`
	// Spawn starts this many processes that live until all have started.
	Spawn int `json:"spawn,omitempty" jsonschema:"how many processes to run at once"`
	// Hostile tries what a server that wants to become the operator
	// would (see hostile.go), against the process of this pid (oa, as
	// the host sees it).
	Hostile int `json:"hostile,omitempty" jsonschema:"a pid outside the server's tree to act on"`
}

// Outcome is what the kernel said to each attempt: "allowed", "denied"
// (EACCES, EPERM, or EROFS: a write into a folder the server's mount
// namespace covers read-only), "unreachable" (ENETUNREACH: no network at all),
// "absent" (ENOENT: not there for the server, such as a file in a folder
// its mount namespace hides), ""
// when not tried, or "error: …" for anything else.
type Outcome struct {
	Read    string `json:"read,omitempty"`
	Write   string `json:"write,omitempty"`
	Connect string `json:"connect,omitempty"`
	UDP     string `json:"udp,omitempty"`
	// Unix is the verdict of each Unix attempt, in order.
	Unix []string `json:"unix,omitempty"`
	// Home, Tmp and OpenFiles are the server's HOME, TMPDIR and soft
	// RLIMIT_NOFILE, and HomeWritable whether it could write in HOME.
	Home         string `json:"home,omitempty"`
	Tmp          string `json:"tmp,omitempty"`
	OpenFiles    uint64 `json:"openFiles,omitempty"`
	HomeWritable bool   `json:"homeWritable,omitempty"`
	// Allocate, Files and Spawn are "allowed" when the whole amount was
	// had at once, else what stopped it: "no memory" (ENOMEM), "too many
	// files" (EMFILE), "no more processes" (EAGAIN), or "error: …".
	Allocate string `json:"allocate,omitempty"`
	Files    string `json:"files,omitempty"`
	Spawn    string `json:"spawn,omitempty"`
	// Hostile is what the kernel said to each hostile attempt, by name,
	// and the server's capability and seccomp lines of /proc/self/status.
	Hostile map[string]string `json:"hostile,omitempty"`
}

// Report is the answer of a probe call.
type Report struct {
	Server Outcome  `json:"server"`
	Child  *Outcome `json:"child,omitempty"`
}

var (
	attempt = flag.String("attempt", "", "make these attempts (JSON) and print the outcome (the child's mode)")
	hold    = flag.Bool("hold", false, "sleep a minute (a process of a spawn attempt, killed before that)")
)

func main() {
	flag.Parse()
	if *hold {
		time.Sleep(time.Minute)
		return
	}
	if *attempt != "" {
		var a Attempts
		if err := json.Unmarshal([]byte(*attempt), &a); err != nil {
			fmt.Fprintln(os.Stderr, "probeserver:", err)
			os.Exit(2)
		}
		_ = json.NewEncoder(os.Stdout).Encode(try(a))
		return
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "oa-probeserver", Version: "v1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "probe", Description: "try to read, write and connect"}, probe)
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "probeserver:", err)
		os.Exit(1)
	}
}

func probe(ctx context.Context, _ *mcp.CallToolRequest, a Attempts) (*mcp.CallToolResult, Report, error) {
	r := Report{Server: try(a)}
	if a.Child {
		c, err := inChild(ctx, a)
		if err != nil {
			return nil, Report{}, err
		}
		r.Child = c
	}
	return nil, r, nil
}

// inChild runs this program with --attempt and reads its outcome.
func inChild(ctx context.Context, a Attempts) (*Outcome, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	a.Child = false
	b, _ := json.Marshal(a)
	out, err := exec.CommandContext(ctx, self, "--attempt", string(b)).Output()
	if err != nil {
		return nil, fmt.Errorf("the child failed: %w", err)
	}
	var o Outcome
	return &o, json.Unmarshal(out, &o)
}

// try makes the attempts in this process.
func try(a Attempts) Outcome {
	o := Outcome{Home: os.Getenv("HOME"), Tmp: os.Getenv("TMPDIR")}
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil {
		o.OpenFiles = lim.Cur
	}
	if o.Home != "" {
		o.HomeWritable = os.WriteFile(o.Home+"/probe-state", []byte("x"), 0o600) == nil
	}
	if a.Read != "" {
		_, err := os.ReadFile(a.Read)
		o.Read = verdict(err)
	}
	if a.Write != "" {
		o.Write = verdict(os.WriteFile(a.Write, []byte("written by the probe\n"), 0o600))
	}
	if a.Connect != "" {
		c, err := net.DialTimeout("tcp", a.Connect, 5*time.Second)
		if err == nil {
			c.Close()
		}
		o.Connect = verdict(err)
	}
	if a.UDP != "" {
		c, err := net.Dial("udp", a.UDP)
		if err == nil {
			_, err = c.Write([]byte("probe"))
			c.Close()
		}
		o.UDP = verdict(err)
	}
	for _, path := range a.Unix {
		c, err := net.Dial("unix", path)
		if err == nil {
			c.Close()
		}
		o.Unix = append(o.Unix, verdict(err))
	}
	if a.Allocate > 0 {
		o.Allocate = allocate(a.Allocate)
	}
	if a.Files > 0 {
		o.Files = openFiles(a.Files)
	}
	if a.Spawn > 0 {
		o.Spawn = spawn(a.Spawn)
	}
	if a.Hostile > 0 {
		o.Hostile = hostile(a.Hostile)
	}
	return o
}

// allocate maps n bytes of anonymous memory and unmaps them.
func allocate(n int64) string {
	b, err := syscall.Mmap(-1, 0, int(n), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return verdict(err)
	}
	_ = syscall.Munmap(b)
	return "allowed"
}

// openFiles holds n descriptors of /dev/null open at once.
func openFiles(n int) string {
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	for range n {
		f, err := os.Open(os.DevNull)
		if err != nil {
			return verdict(err)
		}
		files = append(files, f)
	}
	return "allowed"
}

// spawn runs n processes of this program at once (each would sleep a
// minute), then kills and reaps them. They are started with no open
// files, so the attempt counts processes, not descriptors.
func spawn(n int) string {
	self, err := os.Executable()
	if err != nil {
		return verdict(err)
	}
	var pids []int
	defer func() {
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(pid, &ws, 0, nil)
		}
	}()
	for range n {
		pid, err := syscall.ForkExec(self, []string{self, "--hold"}, &syscall.ProcAttr{})
		if err != nil {
			return verdict(err)
		}
		pids = append(pids, pid)
	}
	return "allowed"
}

// verdict names what the kernel said.
func verdict(err error) string {
	switch {
	case err == nil:
		return "allowed"
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM), errors.Is(err, syscall.EROFS):
		return "denied"
	case errors.Is(err, syscall.ENETUNREACH):
		return "unreachable"
	case errors.Is(err, syscall.ENOENT):
		// Hidden by the server's own mount namespace, or never there.
		return "absent"
	case errors.Is(err, syscall.ENOMEM):
		return "no memory"
	case errors.Is(err, syscall.EMFILE):
		return "too many files"
	case errors.Is(err, syscall.EAGAIN):
		return "no more processes"
	default:
		return "error: " + err.Error()
	}
}
