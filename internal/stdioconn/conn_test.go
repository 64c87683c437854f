package stdioconn_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oa-dev/oa/internal/stdioconn"
)

// FuzzDecode: Decode accepts exactly the lines the go-sdk's
// jsonrpc.DecodeMessage accepts (objects, which is all a stdio line may
// be here) and decodes them to the same message.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"a","result":{"x":[1,2]}}`, `{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"m","data":{"d":1}}}`,
		`{"jsonrpc":"2.0","id":1,"Method":"ping"}`, `{"jsonrpc":"2.0","id":1,"method":""}`, `{"jsonrpc":"2.0","id":null,"result":1}`,
		`{"jsonrpc":"1.0","id":1,"method":"ping"}`, `{"jsonrpc":"2.0","id":true,"method":"ping"}`, `{"jsonrpc":"2.0","id":1,"params":null,"method":"x"}`,
		`{"jsonrpc":"2.0","id":1,"error":null}`, `{"jsonrpc":"2.0","id":1,"error":{"code":"x"}}`, `{}`, `{"jsonrpc":"2.0","id":1e400,"method":"x"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if len(bytes.TrimSpace(line)) == 0 || bytes.TrimSpace(line)[0] != '{' {
			return // arrays are batches, which the go-sdk reads elsewhere; scalars it refuses too
		}
		want, wantErr := jsonrpc.DecodeMessage(line)
		got, err := stdioconn.Decode(line)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("%q: Decode error %v, go-sdk error %v", line, err, wantErr)
		}
		if err != nil {
			return
		}
		a, _ := jsonrpc.EncodeMessage(want)
		b, _ := jsonrpc.EncodeMessage(got)
		if !bytes.Equal(a, b) {
			t.Fatalf("%q: decoded to %s, the go-sdk to %s", line, b, a)
		}
	})
}

// TestConnReadsLines: messages over several lines (a blank line, CRLF, a
// last line without newline) arrive in order, and each decoded message
// owns its bytes though the line buffer is reused.
func TestConnReadsLines(t *testing.T) {
	input := `{"jsonrpc":"2.0","id":1,"method":"a","params":{"long":"` + strings.Repeat("x", 100<<10) + `"}}` + "\n\n" +
		`{"jsonrpc":"2.0","id":2,"method":"b","params":{"k":"v"}}` + "\r\n" + `{"jsonrpc":"2.0","id":3,"method":"c","params":[3]}`
	c := stdioconn.New(io.NopCloser(strings.NewReader(input)), io.Discard, stdioconn.Options{})
	defer c.Close()
	ctx := context.Background()
	var got []*jsonrpc.Request
	for range 3 {
		m, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, m.(*jsonrpc.Request))
	}
	if _, err := c.Read(ctx); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last line: %v", err)
	}
	if got[0].Method != "a" || len(got[0].Params) < 100<<10 || got[1].Method != "b" || string(got[1].Params) != `{"k":"v"}` || string(got[2].Params) != "[3]" {
		t.Fatalf("read %+v %+v %+v", got[0].Method, got[1], got[2])
	}
}

// TestConnBounds: a line over MaxLine ends the connection with
// ErrLineTooLong, and a line that is not a message with a decoding error.
func TestConnBounds(t *testing.T) {
	ctx := context.Background()
	c := stdioconn.New(io.NopCloser(strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"`+strings.Repeat("x", 200)+`"}`+"\n")), io.Discard, stdioconn.Options{MaxLine: 100})
	if _, err := c.Read(ctx); !errors.Is(err, stdioconn.ErrLineTooLong) {
		t.Fatalf("long line: %v", err)
	}
	c = stdioconn.New(io.NopCloser(strings.NewReader("{nope\n")), io.Discard, stdioconn.Options{})
	if _, err := c.Read(ctx); err == nil {
		t.Fatal("a line that is not JSON was read")
	}
}

// TestConnCloseUnblocksRead: Close ends a Read waiting on input that
// never comes.
func TestConnCloseUnblocksRead(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	c := stdioconn.New(r, io.Discard, stdioconn.Options{})
	done := make(chan error, 1)
	go func() { _, err := c.Read(context.Background()); done <- err }()
	c.Close()
	if err := <-done; !errors.Is(err, io.EOF) {
		t.Fatalf("read after close: %v", err)
	}
}

// TestCommandRoundTrip: a go-sdk client over Command speaks to a real
// stdio server subprocess (`cat`, which echoes the client's own request
// as the answer would be shaped: it is enough to see the bytes go out
// as one line and come back decoded), and Close ends the process.
func TestCommandRoundTrip(t *testing.T) {
	if _, err := exec.LookPath("cat"); err != nil {
		t.Skip("no cat")
	}
	tr := &stdioconn.Command{Cmd: exec.Command("cat"), TerminateDuration: time.Second}
	conn, err := tr.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var _ mcp.Transport = tr
	id, _ := jsonrpc.MakeID(float64(7))
	params, _ := json.Marshal(map[string]string{"x": "y"})
	if err := conn.Write(context.Background(), &jsonrpc.Request{ID: id, Method: "ping", Params: params}); err != nil {
		t.Fatal(err)
	}
	m, err := conn.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if req, ok := m.(*jsonrpc.Request); !ok || req.Method != "ping" || req.ID != id || string(req.Params) != `{"x":"y"}` {
		t.Fatalf("read back %+v", m)
	}
	if err := conn.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if tr.Cmd.ProcessState == nil || !tr.Cmd.ProcessState.Exited() {
		t.Fatal("the process still runs after Close")
	}
}

// TestPipeCarriesASession: a go-sdk server and client over a Pipe list
// and call a tool, and closing the client ends the server's session.
func TestPipeCarriesASession(t *testing.T) {
	ctx := context.Background()
	server := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	type in struct {
		Name string `json:"name"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "greet"}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, map[string]string, error) {
		return nil, map[string]string{"greeting": "hello " + a.Name}, nil
	})
	st, ct := stdioconn.Pipe()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{"name": "pipe"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := json.Marshal(res.StructuredContent); string(got) != `{"greeting":"hello pipe"}` {
		t.Fatalf("structured %s", got)
	}
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- ss.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the server session outlived the client's close")
	}
}
