package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/signing"
)

// A question an app asks during an effect is answerable on the host: the
// coordinator waiting for it listens on a Unix socket under $OA_HOME/q
// (0700 folder, 0600 socket, named by the attention item) for as long as
// the question waits. `oa attention show` asks it for the question (the
// app's message and form, shown to the person at the terminal and kept
// nowhere) and `oa attention answer` sends the person's answer, which the
// coordinator checks against the form and hands to the app unchanged.
// Each exchange is one bounded JSON request and reply.

// questionDir is the folder of the question sockets of a host.
func questionDir(home string) string { return filepath.Join(home, "q") }

// questionSocket is the socket of question id.
func questionSocket(home, id string) string { return filepath.Join(questionDir(home), id+".sock") }

// Bounds of one socket exchange.
const (
	questionIOTimeout = 30 * time.Second
	questionMaxBytes  = 1 << 20
)

// questionRequest is one request over a question socket.
type questionRequest struct {
	Op     string  `json:"op"` // "show" or "answer"
	Answer *Answer `json:"answer,omitempty"`
	By     string  `json:"by,omitempty"`
}

// QuestionShown is an app's question as shown to the person answering it.
// It is never stored: Message, URL and Schema are the app's own.
type QuestionShown struct {
	AttentionID string          `json:"attention_id"`
	Connection  string          `json:"connection"`
	Capability  string          `json:"capability"`
	Mode        string          `json:"mode"`
	Message     string          `json:"message"`
	URL         string          `json:"url,omitempty"`
	Schema      json.RawMessage `json:"requested_schema,omitempty"`
}

// questionReply is one reply over a question socket.
type questionReply struct {
	Question *QuestionShown `json:"question,omitempty"`
	Item     *AttentionItem `json:"item,omitempty"`
	Code     blocking.Code  `json:"code,omitempty"`
	Detail   string         `json:"detail,omitempty"`
}

// serveQuestion listens for answers to l on its socket until the
// returned func is called (it is safe to call more than once). A socket
// that cannot be made is told to the operator: the question is still
// answerable through the MCP client.
func (c *Coordinator) serveQuestion(l *liveQuestion) (stop func()) {
	dir := questionDir(c.opts.Home)
	path := questionSocket(c.opts.Home, l.id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		fmt.Fprintf(c.opts.Operator, "oa coordinator: attention %s: the question cannot be answered on the host: %v\n", l.id, err)
		return func() {}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		fmt.Fprintf(c.opts.Operator, "oa coordinator: attention %s: the question cannot be answered on the host: %v\n", l.id, err)
		return func() {}
	}
	_ = os.Chmod(path, 0o600)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go c.serveQuestionConn(conn, l)
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			ln.Close()
			_ = os.Remove(path)
		})
	}
}

func (c *Coordinator) serveQuestionConn(conn net.Conn, l *liveQuestion) {
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(questionIOTimeout))
	var req questionRequest
	reply := questionReply{}
	if err := json.NewDecoder(io.LimitReader(conn, questionMaxBytes)).Decode(&req); err != nil {
		reply.Code, reply.Detail = blocking.QuestionAnswerInvalid, "the request is not one JSON object of at most 1 MiB"
	} else {
		switch req.Op {
		case "show":
			if c.questions.get(l.id) == nil {
				reply.Code, reply.Detail = blocking.QuestionNotWaiting, "the question was answered or its call is gone"
				break
			}
			schema, _ := json.Marshal(l.params.RequestedSchema)
			mode := l.params.Mode
			if mode == "" {
				mode = "form"
			}
			reply.Question = &QuestionShown{AttentionID: l.id, Connection: l.connection, Capability: l.capability, Mode: mode, Message: l.params.Message, URL: l.params.URL}
			if string(schema) != "null" {
				reply.Question.Schema = schema
			}
		case "answer":
			if req.Answer == nil || req.By == "" {
				reply.Code, reply.Detail = blocking.QuestionAnswerInvalid, "an answer and the person answering are required"
				break
			}
			item, err := c.AnswerQuestion(context.Background(), l.id, *req.Answer, req.By, "cli")
			if err != nil {
				reply.Code, reply.Detail = refusalOf(err)
				break
			}
			reply.Item = item
		default:
			reply.Code, reply.Detail = blocking.QuestionAnswerInvalid, "unknown request"
		}
	}
	_ = json.NewEncoder(conn).Encode(reply)
}

// refusalOf is err's first refusal code and detail, or a fixed fault.
func refusalOf(err error) (blocking.Code, string) {
	if r := blocking.Refusals(err); len(r) > 0 {
		return r[0].Code, r[0].Detail
	}
	return blocking.QuestionNotWaiting, "the coordinator could not record the answer"
}

// askQuestionSocket makes one exchange with the coordinator waiting for
// question id.
func askQuestionSocket(ctx context.Context, h *host.Host, id string, req questionRequest) (*questionReply, error) {
	if _, err := getAttention(ctx, h, id); err != nil {
		return nil, err
	}
	d := net.Dialer{Timeout: 5 * time.Second}
	conn, err := d.DialContext(ctx, "unix", questionSocket(h.Home, id))
	if err != nil {
		return nil, blocking.New(blocking.QuestionNotWaiting, "no coordinator on this host waits for an answer to this item")
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(questionIOTimeout))
	if err := json.NewEncoder(conn).Encode(req); err != nil {
		return nil, blocking.New(blocking.QuestionNotWaiting, "the waiting coordinator did not take the request")
	}
	var reply questionReply
	if err := json.NewDecoder(io.LimitReader(conn, questionMaxBytes)).Decode(&reply); err != nil {
		return nil, blocking.New(blocking.QuestionNotWaiting, "the waiting coordinator did not answer")
	}
	if reply.Code != "" {
		return nil, blocking.New(reply.Code, "%s", reply.Detail)
	}
	return &reply, nil
}

// ShowQuestion asks the coordinator waiting for question id what the app
// asks, to show it to the person answering.
func ShowQuestion(ctx context.Context, h *host.Host, id string) (*QuestionShown, error) {
	reply, err := askQuestionSocket(ctx, h, id, questionRequest{Op: "show"})
	if err != nil {
		return nil, err
	}
	if reply.Question == nil {
		return nil, errors.New("coordinator: the waiting coordinator sent no question")
	}
	return reply.Question, nil
}

// AnswerQuestion sends a person's answer to the app's question id through
// the coordinator waiting for it; by names the person.
func AnswerQuestion(ctx context.Context, h *host.Host, id string, a Answer, by string) (*AttentionItem, error) {
	reply, err := askQuestionSocket(ctx, h, id, questionRequest{Op: "answer", Answer: &a, By: by})
	if err != nil {
		return nil, err
	}
	if reply.Item == nil {
		return nil, errors.New("coordinator: the waiting coordinator sent no item")
	}
	return reply.Item, nil
}

// hostStore is what a decision on a question needs: the host, the
// receipt signer, and whether this process holds the question live.
type hostStore struct {
	h      *host.Host
	signer *signing.Signer
	live   func(id string) bool
}

// FormContent builds an accept's content from NAME=VALUE fields, typed by
// the app's requested form (string, integer, number, boolean): a field
// the form does not ask for, or a value of another type, is refused by
// name. The coordinator checks the content against the form again.
func (q *QuestionShown) FormContent(fields []string) (map[string]any, error) {
	var form struct {
		Properties map[string]struct {
			Type string `json:"type"`
		} `json:"properties"`
	}
	if len(q.Schema) > 0 {
		if err := json.Unmarshal(q.Schema, &form); err != nil {
			return nil, blocking.New(blocking.QuestionAnswerInvalid, "the app's form cannot be read")
		}
	}
	out := map[string]any{}
	for _, f := range fields {
		name, value, ok := strings.Cut(f, "=")
		prop, known := form.Properties[name]
		switch {
		case !ok || name == "":
			return nil, blocking.New(blocking.QuestionAnswerInvalid, "a field is given as NAME=VALUE")
		case !known:
			return nil, blocking.New(blocking.QuestionAnswerInvalid, "the app's form has no field %q", name)
		}
		var err error
		switch prop.Type {
		case "integer":
			out[name], err = strconv.ParseInt(value, 10, 64)
		case "number":
			out[name], err = strconv.ParseFloat(value, 64)
		case "boolean":
			out[name], err = strconv.ParseBool(value)
		default:
			out[name] = value
		}
		if err != nil {
			return nil, blocking.New(blocking.QuestionAnswerInvalid, "field %q takes a %s", name, prop.Type)
		}
	}
	return out, nil
}
