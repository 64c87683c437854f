package demo_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/demo"
)

func TestPrepareServesTheDemo(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	var progress bytes.Buffer
	setup, err := demo.Prepare(ctx, home, &progress)
	if err != nil {
		t.Fatal(err)
	}
	if setup.Binding.Deployment != demo.Deployment || !strings.Contains(progress.String(), "bound to deployment clinic") {
		t.Fatalf("setup %+v\n%s", setup.Binding, progress.String())
	}
	if _, err := demo.Prepare(ctx, home, &progress); err == nil {
		t.Fatal("prepared twice into one host")
	}
	c, err := coordinator.Open(ctx, coordinator.Options{Home: home, Deployment: demo.Deployment})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := c.Run(ctx, coordinator.RunRequest{Workflow: "append_triage_note", RequestID: "demo-1", Wait: 30 * time.Second,
		Inputs: json.RawMessage(`{"record_ref":"AB-1234","urgency":"routine","summary":"Checked in."}`)})
	if err != nil || res.Outcome != contract.OutcomeDone {
		t.Fatalf("demo run: %+v, %v", res, err)
	}
}
