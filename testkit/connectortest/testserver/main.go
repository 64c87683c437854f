// Command testserver is a small MCP stdio server for oa's tests. It lists
// the tools of a JSON file exactly as written there (so tests can serve
// lists a real server library would refuse to build), and answers a call
// with the tool's configured result (structured, or content blocks only,
// as a text-only server answers) or an echo of the arguments.
//
// Flags:
//
//	--tools FILE          the tool list (connectortest.ToolSpec entries)
//	--page-size N         list N tools per tools/list page (0: all at once)
//	--reload-tools        read the tools file again on every tools/list
//	--announce-changes    declare tools.listChanged, and with --reload-tools
//	                      send tools/list_changed when the tools file changes
//	--count-lists         append a line to the tools file's name plus
//	                      ".lists" for each tools/list
//	--hang-on-call        never answer a tools/call
//	--crash-on-call       exit with status 3 on a tools/call
//	--hang-at-start       never answer initialize
//	--exit-at-start       exit with status 3 before speaking MCP
//	--spawn-grandchild    start a long sleep in the same process group
//	--spawn-setsid        start a long sleep that calls setsid (a session
//	                      and process group of its own, stdio on /dev/null)
//	--double-fork FILE    start a long sleep through a shell that exits at
//	                      once (a double fork: the sleep is orphaned before
//	                      the server answers initialize, in a session of
//	                      its own) and write its pid to FILE
//	--ignore-term         ignore SIGTERM (only SIGKILL ends the server)
//	--pid-file FILE       write "SERVERPID GRANDCHILDPID" at start, plus
//	                      " SETSIDPID" with --spawn-setsid (0: not started)
//	--env-file FILE       write the environment received, as a JSON array
//	--call-file FILE      append the tool's name to FILE when a call arrives
//	--meta-file FILE      append each call's _meta, as a JSON line, to FILE
//	--stderr-text TEXT    write TEXT to stderr at start
//	--stderr-flood N      then write N bytes of 100-byte lines to stderr
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// spec is one tool as the tools file holds it.
type spec struct {
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
	Result       json.RawMessage `json:"result,omitempty"`
	Content      json.RawMessage `json:"content,omitempty"`
	IsError      bool            `json:"isError,omitempty"`
	Hang         bool            `json:"hang,omitempty"`
}

var (
	toolsFile   = flag.String("tools", "", "tool list file")
	pageSize    = flag.Int("page-size", 0, "tools per page")
	reloadTools = flag.Bool("reload-tools", false, "read the tools file again on every tools/list (a server whose tools change while it runs)")
	announce    = flag.Bool("announce-changes", false, "declare tools.listChanged and announce changes of the tools file")
	countLists  = flag.Bool("count-lists", false, "append a line to the tools file's name plus .lists for each tools/list")
	hangOnCall  = flag.Bool("hang-on-call", false, "never answer a call")
	crashOnCall = flag.Bool("crash-on-call", false, "exit on a call")
	hangAtStart = flag.Bool("hang-at-start", false, "never answer initialize")
	exitAtStart = flag.Bool("exit-at-start", false, "exit at start")
	grandchild  = flag.Bool("spawn-grandchild", false, "start a long sleep")
	setsidChild = flag.Bool("spawn-setsid", false, "start a long sleep in a session of its own")
	ignoreTerm  = flag.Bool("ignore-term", false, "ignore SIGTERM")
	doubleFork  = flag.String("double-fork", "", "start an orphaned sleep and write its pid here")
	pidFile     = flag.String("pid-file", "", "write pids here")
	envFile     = flag.String("env-file", "", "write the environment here")
	callFile    = flag.String("call-file", "", "append each called tool's name here")
	metaFile    = flag.String("meta-file", "", "append each call's _meta here, one JSON line each")
	stderrText  = flag.String("stderr-text", "", "write this to stderr")
	stderrFlood = flag.Int("stderr-flood", 0, "write this many bytes of 100-byte lines to stderr")
	linger      = flag.Bool("linger", false, "keep running after stdin ends (a server that outlives its owner)")
)

func main() {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "testserver:", err)
		os.Exit(1)
	}
}

func run() error {
	if *stderrText != "" {
		fmt.Fprintln(os.Stderr, *stderrText)
	}
	if *stderrFlood > 0 {
		line := []byte(strings.Repeat("x", 99) + "\n")
		for n := 0; n < *stderrFlood; n += len(line) {
			_, _ = os.Stderr.Write(line)
		}
	}
	if *exitAtStart {
		os.Exit(3)
	}
	if *ignoreTerm {
		signal.Ignore(syscall.SIGTERM)
	}
	if err := writeEnv(); err != nil {
		return err
	}
	if err := startGrandchild(); err != nil {
		return err
	}
	if err := startOrphan(); err != nil {
		return err
	}
	if *hangAtStart {
		hang()
	}
	specs, err := readSpecs()
	if err != nil {
		return err
	}
	server := newServer(specs)
	if *announce && *reloadTools {
		go announceChanges(server)
	}
	err = server.Run(context.Background(), &mcp.StdioTransport{})
	if *linger {
		hang()
	}
	return err
}

// announceChanges watches the tools file and, when its bytes change, makes
// the go-sdk send tools/list_changed by adding a tool (which tools/list,
// served from the file, never shows).
func announceChanges(server *mcp.Server) {
	last, _ := os.ReadFile(*toolsFile)
	for n := 0; ; time.Sleep(10 * time.Millisecond) {
		b, err := os.ReadFile(*toolsFile)
		if err != nil || bytes.Equal(b, last) {
			continue
		}
		last = b
		n++
		server.AddTool(&mcp.Tool{Name: "changed_" + strconv.Itoa(n), InputSchema: json.RawMessage(`{"type":"object"}`)}, callHandler(spec{}))
	}
}

// hang blocks forever. A bare select{} would not: with no other goroutine
// the runtime reports a deadlock and exits.
func hang() {
	for {
		time.Sleep(time.Hour)
	}
}

// writeEnv records the environment the server was given.
func writeEnv() error {
	if *envFile == "" {
		return nil
	}
	b, _ := json.Marshal(os.Environ())
	return os.WriteFile(*envFile, b, 0o600)
}

// startGrandchild starts a sleep that shares the server's process group
// and its stderr, and (with --spawn-setsid) one that leaves both, and
// writes the pid file.
func startGrandchild() error {
	gpid, spid := 0, 0
	if *grandchild {
		cmd := exec.Command("sleep", "1000")
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			return err
		}
		gpid = cmd.Process.Pid
	}
	if *setsidChild {
		// The child calls setsid before it execs sleep, as a daemon
		// detaching from its parent's session and group would.
		cmd := exec.Command("sleep", "1000")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			return err
		}
		spid = cmd.Process.Pid
	}
	if *pidFile == "" {
		return nil
	}
	// The pid namespace first: a confined server has one of its own where
	// oa may make it, and the pids are its (connectortest.PIDFile).
	ns, _ := os.Readlink("/proc/self/ns/pid")
	line := ns + " " + strconv.Itoa(os.Getpid()) + " " + strconv.Itoa(gpid)
	if *setsidChild {
		line += " " + strconv.Itoa(spid)
	}
	return os.WriteFile(*pidFile, []byte(line+"\n"), 0o600)
}

// startOrphan double-forks a long sleep: a shell starts it in the
// background in a session of its own and exits at once, so the sleep's
// parent is gone before anyone could have seen it as the server's
// grandchild.
func startOrphan() error {
	if *doubleFork == "" {
		return nil
	}
	out, err := exec.Command("sh", "-c", "setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo $!").Output()
	if err != nil {
		return err
	}
	ns, _ := os.Readlink("/proc/self/ns/pid") // as --pid-file: connectortest.PIDFile
	return os.WriteFile(*doubleFork, append([]byte(ns+" "), out...), 0o600)
}

func readSpecs() ([]spec, error) {
	if *toolsFile == "" {
		return nil, nil
	}
	b, err := os.ReadFile(*toolsFile)
	if err != nil {
		return nil, err
	}
	var specs []spec
	return specs, json.Unmarshal(b, &specs)
}

// newServer registers a handler per distinct tool name, and serves
// tools/list from the specs verbatim through a middleware.
func newServer(specs []spec) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "oa-testserver", Version: "v1"}, &mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: *announce}}})
	for _, sp := range specs {
		s.AddTool(&mcp.Tool{Name: sp.Name, Description: "x", InputSchema: json.RawMessage(`{"type":"object"}`)}, callHandler(sp))
	}
	s.AddReceivingMiddleware(listVerbatim(specs))
	return s
}

// callHandler answers a call to sp.
func callHandler(sp spec) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		noteCall(sp.Name)
		noteMeta(req.Params.Meta)
		if *crashOnCall {
			os.Exit(3)
		}
		if *hangOnCall || sp.Hang {
			hang() // never answer, even once cancelled
		}
		if sp.Content != nil {
			return contentOnly(sp)
		}
		out := sp.Result
		if out == nil {
			out = req.Params.Arguments
		}
		if len(out) == 0 {
			out = json.RawMessage(`{}`)
		}
		return &mcp.CallToolResult{
			StructuredContent: out,
			Content:           []mcp.Content{&mcp.TextContent{Text: string(out)}},
			IsError:           sp.IsError,
		}, nil
	}
}

// contentOnly answers with sp's content blocks and no structured content.
func contentOnly(sp spec) (*mcp.CallToolResult, error) {
	var res mcp.CallToolResult
	b, _ := json.Marshal(map[string]any{"content": sp.Content, "isError": sp.IsError})
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// noteMeta appends a call's _meta to the --meta-file, so a test sees what
// the client passed downstream.
func noteMeta(meta mcp.Meta) {
	if *metaFile == "" {
		return
	}
	b, err := json.Marshal(meta)
	if err != nil {
		return
	}
	f, err := os.OpenFile(*metaFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintln(f, string(b))
}

// noteCall appends name to the --call-file, so a test knows a call has
// arrived (and is hanging, for a tool that hangs).
func noteCall(name string) { appendLine(*callFile, name) }

// appendLine appends line to file ("": to none).
func appendLine(file, line string) {
	if file == "" {
		return
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintln(f, line)
}

// listVerbatim answers tools/list with the specs as written, paged.
func listVerbatim(specs []spec) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "tools/list" {
				return next(ctx, method, req)
			}
			if *countLists {
				appendLine(*toolsFile+".lists", method)
			}
			start := 0
			if p, ok := req.GetParams().(*mcp.ListToolsParams); ok && p != nil && p.Cursor != "" {
				start, _ = strconv.Atoi(p.Cursor)
			}
			if *reloadTools {
				fresh, err := readSpecs()
				if err != nil {
					return nil, err
				}
				return page(fresh, start), nil
			}
			return page(specs, start), nil
		}
	}
}

// page returns the tools from start on, at most --page-size of them.
func page(specs []spec, start int) *mcp.ListToolsResult {
	end := len(specs)
	if *pageSize > 0 && start+*pageSize < end {
		end = start + *pageSize
	}
	res := &mcp.ListToolsResult{Tools: []*mcp.Tool{}}
	for _, sp := range specs[min(start, len(specs)):end] {
		res.Tools = append(res.Tools, toTool(sp))
	}
	if end < len(specs) {
		res.NextCursor = strconv.Itoa(end)
	}
	return res
}

// toTool turns a spec into a listed tool, keeping every JSON value as
// written: a missing input schema stays missing.
func toTool(sp spec) *mcp.Tool {
	t := &mcp.Tool{Name: sp.Name, Description: sp.Description}
	if sp.InputSchema != nil {
		t.InputSchema = sp.InputSchema
	}
	if sp.OutputSchema != nil {
		t.OutputSchema = sp.OutputSchema
	}
	if sp.Annotations != nil {
		var a mcp.ToolAnnotations
		if json.Unmarshal(sp.Annotations, &a) == nil {
			t.Annotations = &a
		}
	}
	return t
}
