package coordinator

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/coordinator/attention"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/signing"
)

// serveQuestion and serveQuestionConn are the server of the question
// socket (attention.QuestionSocket) a coordinator waiting for a person's
// answer listens on; the host-side client, `oa attention show` and
// `oa attention answer`, is attention.Records.ShowQuestion and
// AnswerQuestion.

// serveQuestion listens for answers to l on its socket until the
// returned func is called (it is safe to call more than once). A socket
// that cannot be made is told to the operator: the question is still
// answerable through the MCP client.
func (c *Coordinator) serveQuestion(l *liveQuestion) (stop func()) {
	dir := attention.QuestionDir(c.opts.Home)
	path := attention.QuestionSocket(c.opts.Home, l.id)
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
	_ = conn.SetDeadline(time.Now().Add(attention.QuestionIOTimeout))
	var req attention.QuestionRequest
	reply := attention.QuestionReply{}
	if err := json.NewDecoder(io.LimitReader(conn, attention.QuestionMaxBytes)).Decode(&req); err != nil {
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
			reply.Question = &attention.QuestionShown{AttentionID: l.id, Connection: l.connection, Capability: l.capability, Mode: mode, Message: l.params.Message, URL: l.params.URL}
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

// hostStore is what a decision on a question needs: the host, the
// receipt signer, and whether this process holds the question live.
type hostStore struct {
	h      *host.Host
	signer *signing.Signer
	live   func(id string) bool
}
