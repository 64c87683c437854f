package coordinator_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/coordinator/mcpserve"
	"github.com/oa-dev/oa/internal/stdioconn"
)

// BenchmarkReadStdio: one read-only call (read_record of AB-1234 on
// connectortest's server, a real stdio subprocess) made by a stock go-sdk
// client over stdio pipes, side by side in one run:
//
//   - oa: through the coordinator (NewStdioTransport; the plan check, the
//     inventory check, the receipt-free read path);
//   - proxy: through a bare go-sdk pass-through proxy with no checks (a
//     go-sdk server whose one tool calls the same downstream tool over a
//     go-sdk client), over the go-sdk's own stdio transports: the floor of
//     any MCP proxy built on the go-sdk, the unavoidable hop;
//   - proxy-lines: the same proxy over internal/stdioconn on both sides;
//   - direct: the client calling the downstream server itself.
//
// The ratios oa/direct and proxy/direct are issue 26's per-call figure;
// oa/proxy is what governance costs over the hop.
func BenchmarkReadStdio(b *testing.B) {
	cfg := subprocessRecords(b)
	b.Run("oa", func(b *testing.B) {
		d := newBenchDeployment(b, cfg)
		cs := stdioClient(b, func(ctx context.Context, t mcp.Transport) error { return mcpserve.Serve(ctx, d.c, t) }, mcpserve.NewStdioTransport)
		benchCalls(b, cs, "records_read", true)
	})
	for _, v := range []struct {
		name  string
		lines bool
	}{{"proxy", false}, {"proxy-lines", true}} {
		b.Run(v.name, func(b *testing.B) {
			down := downstreamClient(b, cfg, v.lines)
			serverSide := func(in io.ReadCloser, out io.Writer, _ io.Writer) mcp.Transport {
				if v.lines {
					return &lineTransport{in, out}
				}
				return &mcp.IOTransport{Reader: in, Writer: nopWriteCloser{out}}
			}
			cs := stdioClient(b, func(ctx context.Context, t mcp.Transport) error { return passThrough(down).Run(ctx, t) }, serverSide)
			benchCalls(b, cs, "read_record", false)
		})
	}
	b.Run("direct", func(b *testing.B) {
		benchCalls(b, downstreamClient(b, cfg, false), "read_record", false)
	})
}

// benchCalls calls tool with readArgs once per iteration and checks the
// answer is AB-1234's record (wrapped in the coordinator's result when
// governed).
func benchCalls(b *testing.B, cs *mcp.ClientSession, tool string, governed bool) {
	ctx := context.Background()
	params := &mcp.CallToolParams{Name: tool, Arguments: readArgs}
	b.ReportAllocs()
	for b.Loop() {
		res, err := cs.CallTool(ctx, params)
		if err != nil {
			b.Fatalf("%s: %v", tool, err)
		}
		if res.IsError {
			b.Fatalf("%s answered a tool error: %+v", tool, res.Content)
		}
		raw, _ := json.Marshal(res.StructuredContent)
		var out struct {
			Record  string `json:"record"`
			Content struct {
				Record string `json:"record"`
			} `json:"content"`
		}
		if err := json.Unmarshal(raw, &out); err != nil {
			b.Fatalf("%s answered %s: %v", tool, raw, err)
		}
		record := out.Record
		if governed {
			record = out.Content.Record
		}
		if record != "AB-1234" {
			b.Fatalf("%s answered the record %q, want AB-1234: %s", tool, record, raw)
		}
	}
}

// stdioClient serves with serve over a transport made by newTransport on
// OS pipes, and connects a stock go-sdk client to the other ends, as an
// MCP client that started the server would hold it.
func stdioClient(b *testing.B, serve func(context.Context, mcp.Transport) error, newTransport func(io.ReadCloser, io.Writer, io.Writer) mcp.Transport) *mcp.ClientSession {
	b.Helper()
	toServer, fromClient, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	fromServer, toClient, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- serve(ctx, newTransport(toServer, toClient, io.Discard)) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "v1"}, nil).Connect(ctx, &mcp.IOTransport{Reader: fromServer, Writer: fromClient}, nil)
	if err != nil {
		cancel()
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cs.Close()
		cancel()
		toServer.Close()
		<-served
		toClient.Close()
		fromServer.Close()
	})
	return cs
}

// downstreamClient starts cfg's server and connects a go-sdk client to
// it: over the go-sdk's CommandTransport, or over stdioconn's.
func downstreamClient(b *testing.B, cfg connector.Config, lines bool) *mcp.ClientSession {
	b.Helper()
	cmd := exec.Command(cfg.Command, cfg.Args...)
	var t mcp.Transport = &mcp.CommandTransport{Command: cmd}
	if lines {
		t = &stdioconn.Command{Cmd: cmd}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "v1"}, nil).Connect(context.Background(), t, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

// passThrough is a go-sdk server offering the downstream's tools, each
// call passed to down as it came and its answer returned as it came: no
// check of any kind.
func passThrough(down *mcp.ClientSession) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "proxy", Version: "v1"}, nil)
	tools, err := down.ListTools(context.Background(), nil)
	if err != nil {
		panic(err)
	}
	for _, tool := range tools.Tools {
		srv.AddTool(tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return down.CallTool(ctx, &mcp.CallToolParams{Name: req.Params.Name, Arguments: req.Params.Arguments})
		})
	}
	return srv
}

// lineTransport is the server side of stdioconn over in and out.
type lineTransport struct {
	in  io.ReadCloser
	out io.Writer
}

func (t *lineTransport) Connect(context.Context) (mcp.Connection, error) {
	return stdioconn.New(t.in, t.out, stdioconn.Options{}), nil
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
