package mcpserve_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/oa-dev/oa/connector/sandbox"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator/mcpserve"
	"github.com/oa-dev/oa/ledger"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/hosttest"
	"github.com/oa-dev/oa/testkit/servetest"
)

// FuzzCheckMessage: a line CheckMessage passes is one the go-sdk decodes;
// a refused line is answered -32700 or -32600, and an id is echoed only
// when it is a string or an integer.
func FuzzCheckMessage(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"a","result":{}}`, `{bad json`, `[]`, `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}`, `{"jsonrpc":"1.0","id":1,"method":"ping"}`, `{"id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, `{"jsonrpc":"2.0","id":true,"method":"ping"}`, `{"jsonrpc":"2.0","id":1}`,
		`{"jsonrpc":"2.0","method":7}`, `"2.0"`, `null`, `{"jsonrpc":"2.0","id":99999999999999999999,"method":"ping"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		code, id := mcpserve.CheckMessage(line)
		switch code {
		case 0:
			if _, err := jsonrpc.DecodeMessage(line); err != nil {
				t.Fatalf("passed a line the go-sdk refuses: %q: %v", line, err)
			}
			if id != nil {
				t.Fatalf("an id for a passed line: %q", line)
			}
		case jsonrpc.CodeParseError, jsonrpc.CodeInvalidRequest:
			if id == nil {
				return
			}
			var v any
			if err := json.Unmarshal(id, &v); err != nil {
				t.Fatalf("echoed id %q is not JSON", id)
			}
			if _, err := jsonrpc.MakeID(v); err != nil {
				t.Fatalf("echoed id %q is not an id", id)
			}
		default:
			t.Fatalf("code %d for %q", code, line)
		}
	})
}

// rawSession is `oa coordinator serve` driven line by line over its
// stdin and stdout, as a client that writes whatever it likes.
type rawSession struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Scanner
	stderr *servetest.Buffer
}

func startRaw(t *testing.T, oa, home string, extra ...string) *rawSession {
	t.Helper()
	s := startUninitialized(t, oa, home, extra...)
	s.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"v1"}}}`)
	if m := s.next(); string(m.ID) != `"init"` || m.Error != nil {
		t.Fatalf("initialize: %+v\nstderr:\n%s", m, s.stderr)
	}
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return s
}

// startUninitialized starts `oa coordinator serve` and sends nothing.
func startUninitialized(t *testing.T, oa, home string, extra ...string) *rawSession {
	t.Helper()
	cmd := exec.Command(oa, append([]string{"coordinator", "serve", "--deployment", "clinic"}, extra...)...)
	cmd.Env = append(os.Environ(), "OA_HOME="+home)
	s := &rawSession{t: t, cmd: cmd, stderr: &servetest.Buffer{}}
	cmd.Stderr = s.stderr
	var err error
	if s.in, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s.out = bufio.NewScanner(stdout)
	s.out.Buffer(nil, 1<<20)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.in.Close()
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return s
}

func (s *rawSession) send(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		s.t.Fatalf("write: %v\nstderr:\n%s", err, s.stderr)
	}
}

// wireMessage is one message the coordinator wrote.
type wireMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// nextRaw reads the next answer's line as written (notifications from
// the server skipped).
func (s *rawSession) nextRaw() []byte {
	s.t.Helper()
	for s.out.Scan() {
		var m wireMessage
		if err := json.Unmarshal(s.out.Bytes(), &m); err != nil || m.JSONRPC != "2.0" {
			s.t.Fatalf("the coordinator wrote a line that is not JSON-RPC 2.0: %q", s.out.Text())
		}
		if m.Method == "" {
			return slices.Clone(s.out.Bytes())
		}
	}
	s.t.Fatalf("stdout ended: %v\nstderr:\n%s", s.out.Err(), s.stderr)
	return nil
}

// next reads the next answer (notifications from the server skipped).
func (s *rawSession) next() wireMessage {
	s.t.Helper()
	for s.out.Scan() {
		var m wireMessage
		if err := json.Unmarshal(s.out.Bytes(), &m); err != nil || m.JSONRPC != "2.0" {
			s.t.Fatalf("the coordinator wrote a line that is not JSON-RPC 2.0: %q", s.out.Text())
		}
		if m.Method == "" {
			return m
		}
	}
	s.t.Fatalf("stdout ended: %v\nstderr:\n%s", s.out.Err(), s.stderr)
	return wireMessage{}
}

// result decodes a tools/call answer's structured content.
func (m wireMessage) result(t *testing.T) map[string]any {
	t.Helper()
	var r struct {
		StructuredContent map[string]any `json:"structuredContent"`
		IsError           bool           `json:"isError"`
	}
	if m.Error != nil || json.Unmarshal(m.Result, &r) != nil || r.IsError {
		t.Fatalf("not a tool result: %+v %s", m.Error, m.Result)
	}
	return r.StructuredContent
}

func runLine(id, record string, wait int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":%q,"arguments":{"workflow":"append_triage_note","request_id":"req-%s","wait_seconds":%d,"inputs":{"record_ref":%q,"urgency":"soon","summary":"A note."}}}}`, id, contract.ToolRunWorkflow, strings.Trim(id, `"`), wait, record)
}

func TestServeRobust(t *testing.T) {
	if testing.Short() {
		t.Skip("builds oa and runs it as a subprocess")
	}
	oa := func(t *testing.T) string { return servetest.Binary(t) }
	t.Run("MalformedLines", func(t *testing.T) { testMalformedLines(t, oa(t)) })
	t.Run("ClientGoneMidEffect", func(t *testing.T) { testClientGoneMidEffect(t, oa(t)) })
	t.Run("TwoCoordinatorsWait", func(t *testing.T) { testTwoCoordinatorsWait(t, oa(t)) })
	t.Run("ErrorsAreFixedCopy", func(t *testing.T) { testErrorsAreFixedCopy(t, oa(t)) })
}

// planted is the secret the client plants in what it sends; no answer
// may carry it anywhere but in the id it chose.
const planted = "sk_live_SECRETVALUE"

// fixedCopy is every error the coordinator may Answer: the standard
// JSON-RPC 2.0 codes under their standard words, and its own fixed copy
// of tools/call's protocol errors.
var fixedCopy = map[string]bool{
	"-32700 Parse error": true, "-32600 Invalid Request": true, "-32601 Method not found": true,
	"-32602 Invalid params": true, "-32603 Internal error": true,
	"-32602 no such tool, or the call's parameters are malformed; see tools/list": true,
	"-32603 the call could not be served":                                         true,
}

// testErrorsAreFixedCopy (D10): requests whose params, method names and
// ids carry a planted secret, each answered by the go-sdk itself with an
// error, over a real stdio session: every error answer is fixed copy
// under a standard code, carries no data, and the secret appears in no
// answer but as the id the client chose; initialize's own failures
// included.
func testErrorsAreFixedCopy(t *testing.T, oa string) {
	h := servetest.NewHost(t, oa, resolve.StarterRegistry(hosttest.Name))
	check := func(t *testing.T, s *rawSession, line, wantID string, wantCode int64) {
		t.Helper()
		s.send(line)
		raw := s.nextRaw()
		var m wireMessage
		if err := json.Unmarshal(raw, &m); err != nil || m.Error == nil || string(m.ID) != wantID {
			t.Fatalf("%s: answered %s", line, raw)
		}
		withoutID := strings.Replace(string(raw), `"id":`+wantID, "", 1)
		if strings.Contains(withoutID, "sk_live") || strings.Contains(withoutID, "SECRET") {
			t.Fatalf("%s: the answer echoes the request: %s", line, raw)
		}
		if strings.Contains(string(raw), `"data"`) {
			t.Fatalf("%s: the answer carries data: %s", line, raw)
		}
		if got := fmt.Sprintf("%d %s", m.Error.Code, m.Error.Message); !fixedCopy[got] || m.Error.Code != wantCode {
			t.Fatalf("%s: answered %q, want fixed copy under %d", line, got, wantCode)
		}
	}
	t.Run("Initialize", func(t *testing.T) {
		s := startUninitialized(t, oa, h.Home)
		for i, params := range []string{
			`"` + planted + `"`,
			`{"protocolVersion":{"` + planted + `":1},"capabilities":{},"clientInfo":{"name":"raw","version":"v1"}}`,
			`{"protocolVersion":"2025-06-18","capabilities":"` + planted + `","clientInfo":{"name":"raw","version":"v1"}}`,
		} {
			check(t, s, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"initialize","params":%s}`, i, params), fmt.Sprint(i), jsonrpc.CodeInvalidParams)
		}
		s.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"v1"}}}`)
		if m := s.next(); string(m.ID) != `"init"` || m.Error != nil {
			t.Fatalf("initialize after the refused ones: %+v", m)
		}
	})
	t.Run("Session", func(t *testing.T) {
		s := startRaw(t, oa, h.Home)
		cases := []struct {
			line, id string
			code     int64
		}{
			{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"` + planted + `"}`, "1", jsonrpc.CodeInvalidParams},
			{`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"` + planted + `","arguments":{}}}`, "2", jsonrpc.CodeInvalidParams},
			{`{"jsonrpc":"2.0","id":4,"method":"` + planted + `"}`, "4", jsonrpc.CodeMethodNotFound},
			{`{"jsonrpc":"2.0","id":"` + planted + `","method":"tools/` + planted + `","params":{"x":"` + planted + `"}}`, `"` + planted + `"`, jsonrpc.CodeMethodNotFound},
			{`{"jsonrpc":"2.0","id":6,"method":"tools/list","params":{"cursor":"` + planted + `"}}`, "6", jsonrpc.CodeInvalidParams},
			{`{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"file:///` + planted + `"}}`, "7", jsonrpc.CodeInvalidParams},
			{`{"jsonrpc":"2.0","id":9,"method":"ping","params":"` + planted + `"}`, "9", jsonrpc.CodeInvalidParams},
			{`{"jsonrpc":"2.0","id":10,"method":"initialize","params":{"protocolVersion":"` + planted + `","capabilities":{},"clientInfo":{"name":"raw","version":"v1"}}}`, "10", jsonrpc.CodeInvalidParams},
		}
		for _, tc := range cases {
			check(t, s, tc.line, tc.id, tc.code)
		}
		// Arguments of the wrong type reach the tool, which answers a
		// tool error in its own fixed copy.
		s.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_workflows","arguments":"` + planted + `"}}`)
		if raw := s.nextRaw(); strings.Contains(string(raw), "sk_live") || !strings.Contains(string(raw), `"isError":true`) {
			t.Fatalf("arguments of the wrong type: %s", raw)
		}
		s.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":%q,"arguments":{}}}`, contract.ToolListWorkflows))
		if m := s.next(); string(m.ID) != "99" || m.Error != nil {
			t.Fatalf("the session after the refusals: %+v", m)
		}
	})
}

// testMalformedLines: each malformed line is answered with its JSON-RPC
// error and the session goes on — a run in flight while the line arrives
// ends done, and the next valid call is answered.
func testMalformedLines(t *testing.T, oa string) {
	h := servetest.NewHost(t, oa, resolve.StarterRegistry(hosttest.Name))
	s := startRaw(t, oa, h.Home)
	cases := []struct {
		line string
		code int64
		id   string
	}{
		{`{bad json`, jsonrpc.CodeParseError, "null"},
		{`[]`, jsonrpc.CodeInvalidRequest, "null"},
		{`[{"jsonrpc":"2.0","id":5,"method":"ping"}]`, jsonrpc.CodeInvalidRequest, "null"},
		{`{"jsonrpc":"2.0","id":{"object":1},"method":"tools/list"}`, jsonrpc.CodeInvalidRequest, "null"},
		{`{"jsonrpc":"1.0","id":7,"method":"tools/list"}`, jsonrpc.CodeInvalidRequest, "7"},
		{`{"jsonrpc":"2.0","id":"x","method":3}`, jsonrpc.CodeInvalidRequest, `"x"`},
		{`"just a string"`, jsonrpc.CodeInvalidRequest, "null"},
	}
	for i, tc := range cases {
		// A run is in flight while the bad line arrives.
		id := fmt.Sprintf("%d", 100+i)
		s.send(runLine(id, "AB-1234", 30))
		s.send(tc.line)
		var answered, refused bool
		for !answered || !refused {
			m := s.next()
			switch {
			case string(m.ID) == id:
				want(t, "the run in flight", m.result(t), contract.OutcomeDone, contract.ReasonVerified)
				answered = true
			case m.Error != nil:
				if m.Error.Code != tc.code || string(m.ID) != tc.id || strings.Contains(m.Error.Message, tc.line) {
					t.Fatalf("%s: answered %+v id %s, want code %d id %s", tc.line, m.Error, m.ID, tc.code, tc.id)
				}
				refused = true
			default:
				t.Fatalf("%s: unexpected answer %+v", tc.line, m)
			}
		}
		s.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{}}}`, 200+i, contract.ToolListWorkflows))
		if m := s.next(); string(m.ID) != fmt.Sprintf("%d", 200+i) || m.Error != nil {
			t.Fatalf("after %s: %+v", tc.line, m)
		}
	}
	if !strings.Contains(s.stderr.String(), "refused a line from the client") || strings.Contains(s.stderr.String(), "bad json") {
		t.Fatalf("operator channel:\n%s", s.stderr)
	}
	s.in.Close()
	if err := s.cmd.Wait(); err != nil {
		t.Fatalf("exit after the client closed stdin: %v\nstderr:\n%s", err, s.stderr)
	}
}

// testClientGoneMidEffect: the client closes stdin while an effect is in
// flight (the sandbox's TO- record wrote its note and never answers); the
// coordinator exits cleanly and records the run client_disconnected, not
// effect_timeout: nothing timed out.
func testClientGoneMidEffect(t *testing.T, oa string) {
	h := servetest.NewHost(t, oa, resolve.StarterRegistry(hosttest.Name))
	s := startRaw(t, oa, h.Home, "--effect-timeout", "10m")
	s.send(runLine(`"gone"`, "TO-0001", 600))
	for {
		notes, err := sandbox.Notes(sandbox.Dir(h.Home), "TO-0001")
		if err == nil && len(notes) > 0 {
			break // the effect reached the app and hangs
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.in.Close()
	if err := s.cmd.Wait(); err != nil {
		t.Fatalf("exit after the client went away: %v\nstderr:\n%s", err, s.stderr)
	}
	row, err := ledger.Open(h.Open()).Tables().RunByRequest(context.Background(), "clinic", "req-gone")
	if err != nil || row == nil {
		t.Fatalf("run: %v", err)
	}
	var full map[string]any
	if err := json.Unmarshal(row.State, &full); err != nil {
		t.Fatal(err)
	}
	if full["status"] != "terminal" || full["reason"] != string(contract.ReasonClientDisconnected) || full["outcome"] != string(contract.OutcomeNotSureIfSaved) || full["receipt_digest"] == nil {
		t.Fatalf("run after the client went away: %v", full)
	}
}

// testTwoCoordinatorsWait: two coordinators serve one OA_HOME; the second
// is asked (run_workflow replay, get_run) for a run the first executes,
// with wait_seconds, and waits for its outcome instead of answering
// running at once.
func testTwoCoordinatorsWait(t *testing.T, oa string) {
	h := servetest.NewHost(t, oa, resolve.StarterRegistry(hosttest.Name))
	first := startRaw(t, oa, h.Home, "--effect-timeout", "3s")
	second := startRaw(t, oa, h.Home)
	first.send(runLine(`"shared"`, "TO-0001", 0))
	started := first.next().result(t)
	want(t, "the first coordinator, at once", started, contract.OutcomeRunning, contract.ReasonInProgress)
	runID, _ := started["run_id"].(string)
	second.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":%q,"arguments":{"run_id":%q,"wait_seconds":120}}}`, contract.ToolGetRun, runID))
	second.send(runLine(`"shared"`, "TO-0001", 120))
	for range 2 {
		m := second.next()
		res := m.result(t)
		want(t, "the second coordinator "+string(m.ID), res, contract.OutcomeNotSureIfSaved, contract.ReasonEffectTimeout)
		if res["run_id"] != runID {
			t.Fatalf("another run: %v", res)
		}
	}
}

// TestStdioTransportSkipsBadLines: in-process, the transport's reader
// answers each bad line (including one longer than MaxLine, and a last
// line without its newline) and hands the go-sdk only the good ones.
func TestStdioTransportSkipsBadLines(t *testing.T) {
	ctx := context.Background()
	long := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", mcpserve.MaxLine) + `"}}`
	input := "{bad json\n\n" + long + "\n" + `{"jsonrpc":"2.0","id":2,"method":"ping"}` + "\n" + `{"jsonrpc":"1.0","id":3,"method":"ping"}` + "\n" + `{"jsonrpc":"2.0","id":4,"method":"ping"}`
	var out, op strings.Builder
	conn, err := mcpserve.NewStdioTransport(io.NopCloser(strings.NewReader(input)), &out, &op).Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, id := range []int64{2, 4} {
		msg, err := conn.Read(ctx)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		req, ok := msg.(*jsonrpc.Request)
		if !ok || req.ID.Raw() != id || req.Method != "ping" {
			t.Fatalf("got %+v, want ping %d", msg, id)
		}
	}
	if _, err := conn.Read(ctx); err == nil {
		t.Fatal("read past the end of the input")
	}
	var codes []string
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m wireMessage
		if err := json.Unmarshal([]byte(line), &m); err != nil || m.Error == nil {
			t.Fatalf("answer %q", line)
		}
		codes = append(codes, fmt.Sprintf("%d/%s", m.Error.Code, m.ID))
	}
	if got := strings.Join(codes, " "); got != "-32700/null -32600/null -32600/3" {
		t.Fatalf("answers %s", got)
	}
	if strings.Contains(op.String(), "bad json") || strings.Count(op.String(), "refused a line") != 3 {
		t.Fatalf("operator:\n%s", op.String())
	}
}
