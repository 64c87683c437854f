package coordinator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"time"

	"github.com/oa-dev/oa/coordinator/attention"
	"github.com/oa-dev/oa/host"
)

// Notifications. When a run pauses for a person, the host policy's
// notify section (host.Notify) tells someone: its command runs with the
// item's id, its fixed copy (the question, which names the workflow, step
// and capability, never a value), the deployment and the run in its
// environment; its webhook is posted the same as JSON. Never the proposed
// change, an input or anything an app said. Both run in the background,
// each bounded in time (notifyTimeout), the webhook retried with backoff
// (notifyAttempts); a pause never waits for them. A failure is told to
// the operator in fixed words — the exit status, the HTTP status — never
// the command's output, the URL or an error's text. At most
// maxNotifying notifications run at once; one over that is dropped and
// said to the operator.

// Bounds of a notification.
const (
	notifyTimeout  = 10 * time.Second
	notifyAttempts = 4
	notifyBackoff  = 500 * time.Millisecond
	maxNotifying   = 8
)

// notifySlots bounds the notifications running at once, process-wide.
var notifySlots = make(chan struct{}, maxNotifying)

// Notice is what a notification says of a paused run: the webhook's JSON
// body, and the command's environment (OA_ATTENTION_ID,
// OA_ATTENTION_COPY, OA_DEPLOYMENT, OA_RUN_ID, OA_ATTENTION_KIND).
type Notice struct {
	AttentionID string `json:"attention_id"`
	Deployment  string `json:"deployment"`
	RunID       string `json:"run_id"`
	Workflow    string `json:"workflow"`
	Step        string `json:"step"`
	// Kind is "approval" or "downstream_question".
	Kind string `json:"kind"`
	// Copy is the item's fixed copy (its question).
	Copy string `json:"copy"`
	// Show is the command the person runs to see the item.
	Show string `json:"show"`
}

// notifyPaused tells the policy's notify section that item paused its
// run, in the background.
func (dk *desk) notifyPaused(item *attention.Stored) {
	n := dk.host.Policy.Notify
	if n == nil {
		return
	}
	kind := item.Kind
	if kind == "" {
		kind = "approval"
	}
	notice := Notice{AttentionID: item.ID, Deployment: item.Deployment, RunID: item.RunID, Workflow: item.Workflow, Step: item.Step, Kind: kind, Copy: item.Question, Show: "oa attention show " + item.ID}
	select {
	case notifySlots <- struct{}{}:
	default:
		fmt.Fprintf(dk.opts.Operator, "oa coordinator: attention %s: not notified: %d notifications are already under way\n", item.ID, maxNotifying)
		return
	}
	go func() {
		defer func() { <-notifySlots }()
		if len(n.Command) > 0 {
			if err := notifyCommand(n.Command, notice); err != nil {
				fmt.Fprintf(dk.opts.Operator, "oa coordinator: attention %s: the notify command failed (%s)\n", item.ID, err)
			}
		}
		if n.Webhook != "" {
			if err := notifyWebhook(n.Webhook, notice); err != nil {
				fmt.Fprintf(dk.opts.Operator, "oa coordinator: attention %s: the notify webhook failed after %d attempts (%s)\n", item.ID, notifyAttempts, err)
			}
		}
	}()
}

// notifyCommand runs argv with the notice in its environment, at most
// notifyTimeout; its output goes nowhere. The error is fixed words.
func notifyCommand(argv []string, n Notice) error {
	ctx, cancel := context.WithTimeout(context.Background(), notifyTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "OA_ATTENTION_ID="+n.AttentionID, "OA_ATTENTION_COPY="+n.Copy, "OA_ATTENTION_KIND="+n.Kind,
		"OA_DEPLOYMENT="+n.Deployment, "OA_RUN_ID="+n.RunID, "OA_WORKFLOW="+n.Workflow, "OA_STEP="+n.Step)
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("it ran over %s and was ended", notifyTimeout)
	case errors.As(err, &exit):
		return fmt.Errorf("exit status %d", exit.ExitCode())
	}
	return errors.New("it could not be started")
}

// notifyWebhook posts the notice to url, each attempt bounded by
// notifyTimeout, retried with doubling backoff on a network failure or a
// 5xx or 429 answer. The error is fixed words.
func notifyWebhook(url string, n Notice) error {
	if !host.UsableWebhook(url) {
		return errors.New("the webhook is not https or loopback")
	}
	body, err := json.Marshal(n)
	if err != nil {
		return err
	}
	client := &http.Client{Timeout: notifyTimeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	last := errors.New("no attempt")
	for attempt := range notifyAttempts {
		if attempt > 0 {
			time.Sleep(notifyBackoff << (attempt - 1))
		}
		req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return errors.New("the webhook is not a URL")
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("User-Agent", "oa-coordinator")
		resp, err := client.Do(req)
		if err != nil {
			last = errors.New("it could not be reached")
			continue
		}
		resp.Body.Close()
		switch {
		case resp.StatusCode >= 200 && resp.StatusCode < 300:
			return nil
		case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests:
			last = fmt.Errorf("HTTP status %d", resp.StatusCode)
		default:
			return fmt.Errorf("HTTP status %d", resp.StatusCode)
		}
	}
	return last
}
