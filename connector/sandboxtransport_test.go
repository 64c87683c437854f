package connector_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/sandbox"
)

func openSandbox(t *testing.T, dir string) *connector.Session {
	t.Helper()
	s, err := connector.Open(context.Background(), connector.Config{Command: connector.SandboxCommand}, connector.Options{SandboxDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func call(t *testing.T, s *connector.Session, tool string, args map[string]any) *connector.CallResult {
	t.Helper()
	res, err := s.Call(context.Background(), tool, args)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func wantStructured(t *testing.T, res *connector.CallResult, isError bool, want string) {
	t.Helper()
	if res.IsError != isError || string(res.Structured) != want {
		t.Fatalf("got isError=%v %s, want isError=%v %s", res.IsError, res.Structured, isError, want)
	}
}

func notes(t *testing.T, dir, ref string) []sandbox.Note {
	t.Helper()
	n, err := sandbox.Notes(dir, ref)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestSandboxInventory(t *testing.T) {
	t.Parallel()
	inv, err := connector.Probe(context.Background(), connector.Config{Command: connector.SandboxCommand}, connector.Options{})
	if err != nil {
		t.Fatal(err)
	}
	again, err := connector.Probe(context.Background(), connector.Config{Command: connector.SandboxCommand}, connector.Options{SandboxDir: t.TempDir()})
	if err != nil || again.Digest != inv.Digest {
		t.Fatalf("sandbox digest depends on the state folder: %v", err)
	}
	read, ok1 := inv.Tool(sandbox.ReadRecord)
	app, ok2 := inv.Tool(sandbox.AppendNote)
	if !ok1 || !ok2 || len(inv.Tools) != 2 {
		t.Fatalf("tools: %+v", inv.Tools)
	}
	if !*read.Annotations.ReadOnly || !*read.Annotations.Idempotent || *read.Annotations.OpenWorld {
		t.Errorf("read_record annotations: %+v", read.Annotations)
	}
	if *app.Annotations.ReadOnly || *app.Annotations.Destructive || *app.Annotations.Idempotent {
		t.Errorf("append_note annotations: %+v", app.Annotations)
	}
	if len(read.OutputSchema) == 0 || len(app.OutputSchema) == 0 {
		t.Error("sandbox tools need output schemas")
	}
	_, err = connector.Open(context.Background(), connector.Config{Command: connector.SandboxCommand, Args: []string{"x"}}, connector.Options{})
	refusal(t, err, blocking.ConnectorConfigInvalid)
}

func TestSandboxReadAndAppend(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := openSandbox(t, dir)
	wantStructured(t, call(t, s, sandbox.ReadRecord, map[string]any{"record": "AB-1234"}), false, `{"notes":[],"record":"AB-1234","status":"open"}`)
	wantStructured(t, call(t, s, sandbox.ReadRecord, map[string]any{"record": "CL-0001"}), false, `{"notes":[],"record":"CL-0001","status":"closed"}`)
	wantStructured(t, call(t, s, sandbox.ReadRecord, map[string]any{"record": "ZZ-9999"}), true, `{"error":"not_found"}`)
	wantStructured(t, call(t, s, sandbox.AppendNote, map[string]any{"record": "AB-1234", "text": "called back"}), false, `{"note_id":"AB-1234-N1","saved":true}`)
	wantStructured(t, call(t, s, sandbox.ReadRecord, map[string]any{"record": "AB-1234"}), false, `{"notes":[{"id":"AB-1234-N1","text":"called back"}],"record":"AB-1234","status":"open"}`)
	wantStructured(t, call(t, s, sandbox.AppendNote, map[string]any{"record": "CL-0001", "text": "x"}), true, `{"error":"closed"}`)
	wantStructured(t, call(t, s, sandbox.AppendNote, map[string]any{"record": "ZZ-9999", "text": "x"}), true, `{"error":"not_found"}`)
	if n := notes(t, dir, "AB-1234"); len(n) != 1 || n[0].Text != "called back" {
		t.Fatalf("stored notes: %+v", n)
	}
	// A later session (as another process would) sees the earlier write.
	s2 := openSandbox(t, dir)
	wantStructured(t, call(t, s2, sandbox.AppendNote, map[string]any{"record": "AB-1234", "text": "second"}), false, `{"note_id":"AB-1234-N2","saved":true}`)
	if n := notes(t, dir, "AB-1234"); len(n) != 2 {
		t.Fatalf("stored notes: %+v", n)
	}
	// Arguments of the wrong shape are refused before anything is sent.
	for _, args := range []map[string]any{{"record": "ab-1234"}, {"record": 12}, {"record": "AB-1234", "text": "x", "extra": 1}, {"text": "x"}} {
		_, err := s.Call(context.Background(), sandbox.AppendNote, args)
		refusal(t, err, blocking.ConnectorArgumentsInvalid)
	}
}

func TestSandboxInMemory(t *testing.T) {
	t.Parallel()
	s := openSandbox(t, "")
	call(t, s, sandbox.AppendNote, map[string]any{"record": "CD-5678", "text": "kept in memory"})
	res := call(t, s, sandbox.ReadRecord, map[string]any{"record": "CD-5678"})
	var rec sandbox.Record
	if err := json.Unmarshal(res.Structured, &rec); err != nil || len(rec.Notes) != 2 {
		t.Fatalf("in-memory record: %s", res.Structured)
	}
	wantStructured(t, call(t, openSandbox(t, ""), sandbox.ReadRecord, map[string]any{"record": "CD-5678"}), false,
		`{"notes":[{"id":"CD-5678-N1","text":"Customer asked for a callback."}],"record":"CD-5678","status":"open"}`)
}

func TestSandboxScriptedFailures(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := openSandbox(t, dir)
	for _, ref := range []string{"DU-0001", "FS-0001", "TO-0001", "OF-0001"} {
		want := `{"notes":[],"record":"` + ref + `","status":"open"}`
		if ref == "OF-0001" {
			wantStructured(t, call(t, s, sandbox.ReadRecord, map[string]any{"record": ref}), true, `{"error":"offline"}`)
			continue
		}
		wantStructured(t, call(t, s, sandbox.ReadRecord, map[string]any{"record": ref}), false, want)
	}

	wantStructured(t, call(t, s, sandbox.AppendNote, map[string]any{"record": "DU-4242", "text": "x"}), true, `{"error":"duplicate"}`)
	if n := notes(t, dir, "DU-4242"); len(n) != 0 {
		t.Fatalf("duplicate wrote %+v", n)
	}
	wantStructured(t, call(t, s, sandbox.AppendNote, map[string]any{"record": "FS-4242", "text": "x"}), false, `{"note_id":"FS-4242-N1","saved":true}`)
	if n := notes(t, dir, "FS-4242"); len(n) != 0 {
		t.Fatalf("false saved wrote %+v", n)
	}
	wantStructured(t, call(t, s, sandbox.AppendNote, map[string]any{"record": "OF-4242", "text": "x"}), true, `{"error":"offline"}`)
	if n := notes(t, dir, "OF-4242"); len(n) != 0 {
		t.Fatalf("offline wrote %+v", n)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := s.Call(ctx, sandbox.AppendNote, map[string]any{"record": "TO-4242", "text": "saved then silent"})
	refusal(t, err, blocking.ConnectorTimeout)
	if n := notes(t, dir, "TO-4242"); len(n) != 1 || n[0].Text != "saved then silent" {
		t.Fatalf("timeout after save did not save: %+v", n)
	}
	_, err = s.Call(context.Background(), sandbox.ReadRecord, map[string]any{"record": "AB-1234"})
	refusal(t, err, blocking.ConnectorClosed)
}
