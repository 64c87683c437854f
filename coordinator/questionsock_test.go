package coordinator_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/confine"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/coordinator/attention"
	"github.com/oa-dev/oa/ledger"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/connectortest"
	"github.com/oa-dev/oa/testkit/hosttest"
	"github.com/oa-dev/oa/testkit/servetest"
)

// attempt is one line of the selfanswer server's report.
type attempt struct {
	Attempt string `json:"attempt"`
	Socket  string `json:"socket"`
	Reply   string `json:"reply"`
}

// readReport waits until the selfanswer server's report holds a line of
// kind, and returns all its lines. The bound is only against a hang.
func readReport(t *testing.T, path, kind string) []attempt {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(path)
		var out []attempt
		found := false
		for line := range strings.Lines(string(b)) {
			var a attempt
			if json.Unmarshal([]byte(line), &a) == nil {
				out = append(out, a)
				found = found || a.Attempt == kind
			}
		}
		if found {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server never reported %q; report:\n%s", kind, b)
		}
	}
}

// TestQuestionSocketRefusesItsServer: a downstream server that asks the
// person a question during a change and, while the run waits, finds the
// question socket under $OA_HOME/q itself (inotify) and answers it as
// "Dr Ada" is refused: confined (the default profile) it cannot read the
// host's secret, so its request carries no valid MAC; unconfined it reads
// the secret and sends a correctly MAC'd request, and is refused as a
// process of the coordinator's server tree (SO_PEERCRED). Either way the
// run stays needs_review (downstream_question), the item stays open and
// undecided, the operator is told, and the person's own answer through
// the real client (oa attention answer's path) is the one the server
// gets. With the peer check off (confined-mac-only), the missing MAC
// alone refuses the confined server. Where oa gives a confined server a
// mount namespace of its own (as root here, or in a user namespace),
// $OA_HOME is not there for it at all: it finds no socket to try, and
// the MAC alone is shown by TestQuestionSocketAuthenticates.
func TestQuestionSocketRefusesItsServer(t *testing.T) {
	confined := func(dir string) *confine.Profile { return connectortest.Allow(dir) }
	for _, tc := range []struct {
		name    string
		profile func(reportDir string) *confine.Profile
		signed  bool // the server reads the secret and signs
		macOnly bool // the peer check is off: the MAC alone decides
		why     string
	}{
		{"confined", confined, false, false, "downstream server's tree"},
		{"confined-mac-only", confined, false, true, "no proof"},
		{"unconfined", func(string) *confine.Profile { return &confine.Profile{Unconfined: true} }, true, false, "downstream server's tree"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.macOnly {
				defer coordinator.SkipQuestionPeerCheck()()
			}
			// Not t.TempDir: its name, made of the test's, reads as a
			// secret to the connection's argument check.
			dir, err := os.MkdirTemp("", "oaq")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			profile := tc.profile(dir)
			if _, err := confine.Require(profile); err != nil {
				t.Skipf("confinement is not available here: %v", err)
			}
			h := hosttest.New(t, nil)
			// The socket folder exists from a host's first question on;
			// made here so the server's inotify watch is in place first.
			if err := os.MkdirAll(attention.QuestionDir(h.Home), 0o700); err != nil {
				t.Fatal(err)
			}
			report := filepath.Join(dir, "report")
			h.WriteRegistry(resolve.StarterRegistry(hosttest.Name))
			opened := h.Open()
			h.AddConnection(opened, "records", resolve.SandboxConnector, connector.Config{Command: connectortest.SelfAnswer(t),
				Args: []string{"--home", h.Home, "--report", report}, Confinement: profile})
			h.Bind(opened, "claude-test")
			operator := &servetest.Buffer{}
			c := openQuestionCoordinator(t, h, operator)
			defer c.Close()
			ctx := context.Background()
			res, err := c.Run(ctx, coordinator.RunRequest{Workflow: "append_triage_note", RequestID: "hostile", Inputs: inputs("AB-1234"), Wait: time.Minute})
			if err != nil {
				t.Fatalf("paused: %v", err)
			}
			wantResult(t, "paused", res, contract.OutcomeNeedsReview, contract.ReasonDownstreamQuestion)

			lines := readReport(t, report, "done")
			// Where the server has a mount namespace of its own, $OA_HOME
			// (and so the socket) is not there for it at all.
			level, err := connector.Enforcement(connector.Config{Command: "x", Confinement: profile})
			hiddenHome := err == nil && level.Holds(confine.GuaranteeSocketFolders)
			if hiddenHome {
				done := lines[len(lines)-1]
				if done.Attempt != "done" {
					t.Fatalf("a server with $OA_HOME hidden: last attempt %q, want done: %+v", done.Attempt, lines)
				}
				if !strings.HasPrefix(done.Reply, "hidden") {
					t.Fatalf("a server with $OA_HOME hidden found a socket: reply %q, want prefix hidden: %+v", done.Reply, lines)
				}
			} else {
				var bare, signed *attempt
				for i := range lines {
					switch lines[i].Attempt {
					case "bare":
						bare = &lines[i]
					case "signed":
						signed = &lines[i]
					}
				}
				if bare == nil {
					t.Fatalf("the server made no bare attempt: %+v", lines)
				}
				if want := res.AttentionID + ".sock"; bare.Socket != want {
					t.Errorf("the server's bare attempt went to socket %q, want %q", bare.Socket, want)
				}
				if !strings.Contains(bare.Reply, string(blocking.QuestionRequestRefused)) {
					t.Errorf("the server's own answer was not refused: reply %q, want %s", bare.Reply, blocking.QuestionRequestRefused)
				}
				if !strings.Contains(bare.Reply, tc.why) {
					t.Errorf("the server's own answer was refused with %q, want it to say %q", bare.Reply, tc.why)
				}
				if signed == nil {
					t.Fatalf("the server made no signed attempt: %+v", lines)
				}
				if gotSecret := strings.HasPrefix(signed.Reply, "secret:"); gotSecret == tc.signed {
					t.Fatalf("the server read the host's secret = %v (reply %q), want %v: %+v", gotSecret, signed.Reply, !tc.signed, lines)
				}
				if tc.signed && !strings.Contains(signed.Reply, string(blocking.QuestionRequestRefused)) {
					t.Fatalf("the server's signed answer was not refused: %+v", signed)
				}
			}

			it, err := c.AttentionItem(ctx, res.AttentionID)
			if err != nil {
				t.Fatalf("the item after the server's attempts: %v", err)
			}
			if it.State != attention.Open {
				t.Errorf("the item after the server's attempts: state %s, want %s", it.State, attention.Open)
			}
			if it.DecidedBy != "" {
				t.Errorf("the item after the server's attempts: decided by %q, want no one", it.DecidedBy)
			}
			if it.AnswerAction != "" {
				t.Errorf("the item after the server's attempts: answered %q, want no answer", it.AnswerAction)
			}
			got, err := c.GetRun(ctx, res.RunID, 0)
			if err != nil {
				t.Fatalf("the run after the server's attempts: %v", err)
			}
			wantResult(t, "the run after the server's attempts", got, contract.OutcomeNeedsReview, contract.ReasonDownstreamQuestion)
			told := strings.Count(operator.String(), "question socket was refused")
			if hiddenHome && told != 0 {
				t.Fatalf("the operator was told %d times of a refused socket, want none with $OA_HOME hidden:\n%s", told, operator.String())
			}
			if !hiddenHome && told != 1 {
				t.Fatalf("the operator was told %d times of a refused socket, want once:\n%s", told, operator.String())
			}
			if !hiddenHome && !strings.Contains(operator.String(), string(blocking.QuestionRequestRefused)) {
				t.Fatalf("the operator was not told the code %s:\n%s", blocking.QuestionRequestRefused, operator.String())
			}

			item, err := coordinator.AttentionRecords(h.Open()).AnswerQuestion(ctx, res.AttentionID, attention.Answer{Action: "accept", Content: map[string]any{"ward": "B-4"}}, "ops")
			if err != nil {
				t.Fatalf("the person's answer: %v", err)
			}
			if item.State != attention.Answered {
				t.Errorf("the person's answer: item state %s, want %s", item.State, attention.Answered)
			}
			if item.DecidedBy != "ops" {
				t.Errorf("the person's answer: decided by %q, want ops", item.DecidedBy)
			}
			for _, a := range readReport(t, report, "elicit") {
				if a.Attempt == "elicit" && a.Reply != "accept B-4" {
					t.Fatalf("the server was answered %q", a.Reply)
				}
			}
		})
	}
}

// TestQuestionSocketAuthenticates: with a question waiting, requests on
// its socket from this very process (which the peer check lets through)
// are refused (question_request_refused) and change nothing when their
// MAC is missing, made with another secret, made for another question,
// made over other bytes, or replayed from an earlier connection; the
// real client's answer (Records.AnswerQuestion, which oa attention answer
// calls) is taken.
func TestQuestionSocketAuthenticates(t *testing.T) {
	h, operator := questionHost(t)
	c := openQuestionCoordinator(t, h, operator)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs := connectPerson(t, ctx, c, nil)
	res, _ := runOverMCP(t, ctx, cs, "q-auth")
	if res.Reason != contract.ReasonDownstreamQuestion {
		t.Fatalf("paused: %+v", res)
	}
	secret, err := os.ReadFile(filepath.Join(h.Home, ledger.SecretFile)) // made by the coordinator
	if err != nil {
		t.Fatal(err)
	}
	id := res.AttentionID
	answer, _ := json.Marshal(attention.QuestionRequest{Op: "answer", Answer: &attention.Answer{Action: "accept", Content: map[string]any{"ward": plantedAnswer}}, By: "Dr Ada"})

	// exchange reads the challenge, then sends what send makes of it and
	// returns the reply.
	exchange := func(send func(challenge []byte) any) attention.QuestionReply {
		t.Helper()
		conn, err := net.Dial("unix", attention.QuestionSocket(h.Home, id))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		r := bufio.NewReader(conn)
		var ch attention.QuestionChallenge
		line, err := r.ReadBytes('\n')
		if err != nil {
			t.Fatalf("challenge: %v", err)
		}
		if err := json.Unmarshal(line, &ch); err != nil {
			t.Fatalf("challenge %q: %v", line, err)
		}
		if len(ch.Challenge) != attention.QuestionChallengeBytes {
			t.Fatalf("challenge of %d bytes, want %d", len(ch.Challenge), attention.QuestionChallengeBytes)
		}
		if err := json.NewEncoder(conn).Encode(send(ch.Challenge)); err != nil {
			t.Fatal(err)
		}
		var reply attention.QuestionReply
		if line, err = r.ReadBytes('\n'); err != nil {
			t.Fatalf("reply: %v", err)
		}
		if err := json.Unmarshal(line, &reply); err != nil {
			t.Fatalf("reply %q: %v", line, err)
		}
		return reply
	}
	other := make([]byte, len(secret))
	copy(other, secret)
	other[0] ^= 1
	var replayed attention.SignedQuestionRequest
	cases := []struct {
		name string
		send func(challenge []byte) any
	}{
		{"no MAC", func([]byte) any { return attention.SignedQuestionRequest{Request: answer} }},
		{"the bare request", func([]byte) any { return json.RawMessage(answer) }},
		{"another secret", func(ch []byte) any {
			return attention.SignedQuestionRequest{Request: answer, MAC: attention.QuestionMAC(other, ch, id, answer)}
		}},
		{"another question", func(ch []byte) any {
			return attention.SignedQuestionRequest{Request: answer, MAC: attention.QuestionMAC(secret, ch, id+"x", answer)}
		}},
		{"other bytes", func(ch []byte) any {
			show, _ := json.Marshal(attention.QuestionRequest{Op: "show"})
			return attention.SignedQuestionRequest{Request: answer, MAC: attention.QuestionMAC(secret, ch, id, show)}
		}},
		{"replayed", func(ch []byte) any { return replayed }},
	}
	// A good request made on its own connection, kept to be replayed on a
	// later one: a show, which changes nothing.
	show, _ := json.Marshal(attention.QuestionRequest{Op: "show"})
	reply := exchange(func(ch []byte) any {
		replayed = attention.SignedQuestionRequest{Request: show, MAC: attention.QuestionMAC(secret, ch, id, show)}
		return replayed
	})
	if reply.Code != "" {
		t.Fatalf("a signed show was refused: %s", reply.Code)
	}
	if reply.Question == nil {
		t.Fatalf("a signed show answered no question: %+v", reply)
	}
	if reply.Question.Message != plantedQuestion {
		t.Fatalf("a signed show answered the message %q, want %q", reply.Question.Message, plantedQuestion)
	}
	for _, tc := range cases {
		reply := exchange(tc.send)
		if reply.Code != blocking.QuestionRequestRefused {
			t.Fatalf("%s: code %q, want %s", tc.name, reply.Code, blocking.QuestionRequestRefused)
		}
		if reply.Item != nil {
			t.Fatalf("%s: a refused request answered the item %+v", tc.name, reply.Item)
		}
		if reply.Question != nil {
			t.Fatalf("%s: a refused request answered the question %+v", tc.name, reply.Question)
		}
	}
	if it, err := c.AttentionItem(ctx, id); err != nil {
		t.Fatalf("after the refused requests: %v", err)
	} else if it.State != attention.Open {
		t.Fatalf("after the refused requests: item state %s, want %s", it.State, attention.Open)
	}
	if strings.Count(operator.String(), "question socket was refused") != 1 {
		t.Fatalf("the operator was not told once:\n%s", operator.String())
	}

	// A client that cannot read the secret sends nothing.
	noSecret := coordinator.AttentionRecords(h.Open())
	noSecret.Secret = func() ([]byte, error) { return nil, os.ErrPermission }
	if _, err := noSecret.AnswerQuestion(ctx, id, attention.Answer{Action: "cancel"}, "ops"); !slices.Contains(hosttest.Codes(t, err), blocking.QuestionRequestRefused) {
		t.Fatalf("without the secret: %v", err)
	}

	item, err := coordinator.AttentionRecords(h.Open()).AnswerQuestion(ctx, id, attention.Answer{Action: "accept", Content: map[string]any{"ward": plantedAnswer}}, "ops")
	if err != nil {
		t.Fatalf("the person's answer: %v", err)
	}
	if item.State != attention.Answered {
		t.Errorf("the person's answer: item state %s, want %s", item.State, attention.Answered)
	}
	if item.DecidedBy != "ops" {
		t.Errorf("the person's answer: decided by %q, want ops", item.DecidedBy)
	}
	if got, err := c.GetRun(ctx, res.RunID, time.Minute); err != nil {
		t.Fatalf("after the answer: %v", err)
	} else if got.Outcome != contract.OutcomeDone {
		t.Fatalf("after the answer: outcome %s, want %s (reason %s)", got.Outcome, contract.OutcomeDone, got.Reason)
	}
	c.Close()
	assertNoPlanted(t, h.Home, operator.String())
}
