package coordinator

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/coordinator/attention"
	"github.com/oa-dev/oa/ledger"
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
func (dk *desk) serveQuestion(l *liveQuestion) (stop func()) {
	dir := attention.QuestionDir(dk.opts.Home)
	path := attention.QuestionSocket(dk.opts.Home, l.id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		fmt.Fprintf(dk.opts.Operator, "oa coordinator: attention %s: the question cannot be answered on the host: %v\n", l.id, err)
		return func() {}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		fmt.Fprintf(dk.opts.Operator, "oa coordinator: attention %s: the question cannot be answered on the host: %v\n", l.id, err)
		return func() {}
	}
	_ = os.Chmod(path, 0o600)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go dk.serveQuestionConn(conn, l)
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

// serveQuestionConn serves one connection: it refuses a peer that is
// not the coordinator's user or that is a process of a server's tree
// (checkQuestionPeer), before it reads anything; then it writes a fresh
// challenge and takes one request only if its MAC under the host's
// coordinator secret covers that challenge, this question's id and the
// request's bytes (attention.QuestionMAC, compared in constant time). The
// secret is what decides — a confined server cannot read it, and the
// challenge makes a request good for this connection only; the peer check
// stands in front of it. A refused request changes nothing.
func (dk *desk) serveQuestionConn(conn net.Conn, l *liveQuestion) {
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(attention.QuestionIOTimeout))
	enc := json.NewEncoder(conn)
	refuse := func(detail string) {
		dk.noteQuestionRefused(l, detail)
		_ = enc.Encode(attention.QuestionReply{Code: blocking.QuestionRequestRefused, Detail: detail})
	}
	if detail := questionPeer(conn); detail != "" {
		refuse(detail)
		return
	}
	challenge := make([]byte, attention.QuestionChallengeBytes)
	if _, err := rand.Read(challenge); err != nil {
		return
	}
	if err := enc.Encode(attention.QuestionChallenge{Challenge: challenge}); err != nil {
		return
	}
	var signed attention.SignedQuestionRequest
	if err := json.NewDecoder(io.LimitReader(conn, attention.QuestionMaxBytes)).Decode(&signed); err != nil {
		// What cannot be read cannot be authenticated either: refused the
		// same way, so a sender without the secret learns nothing more.
		refuse("the request carries no proof that it comes from the host's operator")
		return
	}
	if len(signed.Request) == 0 || !hmac.Equal(signed.MAC, attention.QuestionMAC(dk.secret, challenge, l.id, signed.Request)) {
		refuse("the request carries no proof that it comes from the host's operator")
		return
	}
	var req attention.QuestionRequest
	reply := attention.QuestionReply{}
	if err := json.Unmarshal(signed.Request, &req); err != nil {
		reply.Code, reply.Detail = blocking.QuestionAnswerInvalid, "the request is not one JSON object of at most 1 MiB"
	} else {
		switch req.Op {
		case "show":
			if dk.questions.get(l.id) == nil {
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
			item, err := dk.answerQuestion(context.Background(), l.id, *req.Answer, req.By, "cli", req.Signed, false)
			if err != nil {
				reply.Code, reply.Detail = refusalOf(err)
				break
			}
			reply.Item = item
		default:
			reply.Code, reply.Detail = blocking.QuestionAnswerInvalid, "unknown request"
		}
	}
	_ = enc.Encode(reply)
}

// questionPeer is the peer check of a question socket: checkQuestionPeer,
// which one test turns off to show the MAC decides by itself.
var questionPeer = checkQuestionPeer

// noteQuestionRefused tells the operator, once per question, that a
// request on its socket was refused: something on this host tried to
// answer for a person. Later refusals are not told, so a process that
// keeps trying cannot flood the operator's channel.
func (dk *desk) noteQuestionRefused(l *liveQuestion, detail string) {
	if l.refused.Swap(true) {
		return
	}
	fmt.Fprintf(dk.opts.Operator, "oa coordinator: attention %s: a request on the question socket was refused (%s: %s); further refusals of this question are not shown\n", l.id, blocking.QuestionRequestRefused, detail)
}

// refusalOf is err's first refusal code and detail, or a fixed fault.
func refusalOf(err error) (blocking.Code, string) {
	if r := blocking.Refusals(err); len(r) > 0 {
		return r[0].Code, r[0].Detail
	}
	return blocking.QuestionNotWaiting, "the coordinator could not record the answer"
}

// hostStore is what a decision on a question needs: the host's ledger
// and whether this process holds the question live.
type hostStore struct {
	ledger *ledger.Ledger
	live   func(id string) bool
}
