package attention

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/internal/canonical"
	"github.com/oa-dev/oa/ir"
)

// A person's answer to an app's question is a decision like the others:
// on a host whose policy names persons it is signed by its person over a
// statement (Stored.Statement) that names the answer's digest
// (AnswerDigest) and the decision it amounts to (AnswerDecision), and the
// waiting coordinator holds it to the policy before the app gets it.

// AnswerDecision is the decision an answer amounts to, for the person's
// rights: accept lets the change go on (approve); decline and cancel
// stop it (reject).
func AnswerDecision(action string) string {
	if action == "accept" {
		return "approve"
	}
	return "reject"
}

// AnswerDigest is the digest a signed statement names for answer a: of
// its canonical JSON (action and content).
func AnswerDigest(a Answer) string {
	b, err := json.Marshal(a)
	if err == nil {
		if c, err := canonical.Transform(b); err == nil {
			b = c
		}
	}
	return ir.DigestBytes(b)
}

// A question an app asks during an effect is answerable on the host: the
// coordinator waiting for it listens on a Unix socket under $OA_HOME/q
// (0700 folder, 0600 socket, named by the attention item) for as long as
// the question waits. `oa attention show` asks it for the question (the
// app's message and form, shown to the person at the terminal and kept
// nowhere) and `oa attention answer` sends the person's answer, which the
// coordinator checks against the form and hands to the app unchanged.
// Each exchange is one bounded JSON request and reply: the client is
// here, the server is the waiting coordinator's.
//
// Only a person may answer, and a downstream server can reach the socket
// (a confined server learns its name with inotify, which Landlock does
// not cover, and Landlock below ABI 9 does not cover connecting to a
// pathname socket). So every request proves that its sender can read the
// host's coordinator secret (Records.Secret: $OA_HOME/keys/coordinator.secret,
// which no confined server may read): the coordinator first writes a
// fresh random challenge (QuestionChallenge), and the client answers
// with its request's exact bytes and their MAC (QuestionMAC, keyed by a
// key derived from the secret, over the challenge, the attention id and
// those bytes), so a request is good for one connection to one question
// and cannot be replayed or altered. The coordinator also refuses a peer
// (its SO_PEERCRED credentials) that is another user or a process of a
// server's tree, before it reads anything (coordinator/questionpeer*.go).

// QuestionDir is the folder of the question sockets of a host.
func QuestionDir(home string) string { return filepath.Join(home, "q") }

// QuestionSocket is the socket of question id.
func QuestionSocket(home, id string) string { return filepath.Join(QuestionDir(home), id+".sock") }

// Bounds of one socket exchange.
const (
	QuestionIOTimeout = 30 * time.Second
	QuestionMaxBytes  = 1 << 20
)

// QuestionRequest is one request over a question socket.
type QuestionRequest struct {
	Op     string  `json:"op"` // "show" or "answer"
	Answer *Answer `json:"answer,omitempty"`
	By     string  `json:"by,omitempty"`
	// Signed is the person's signed statement of the answer, on a host
	// whose policy names persons (AnswerStatement).
	Signed *host.SignedDecision `json:"signed,omitempty"`
}

// QuestionChallenge is the first thing the coordinator writes on a
// question socket: a fresh random value the request's MAC must cover.
type QuestionChallenge struct {
	Challenge []byte `json:"challenge"` // QuestionChallengeBytes, base64 on the wire
}

// QuestionChallengeBytes is the length of a challenge.
const QuestionChallengeBytes = 32

// SignedQuestionRequest is what the client writes after the challenge:
// a QuestionRequest's exact JSON bytes and their QuestionMAC. The
// coordinator checks the MAC over those bytes before it reads them.
type SignedQuestionRequest struct {
	Request json.RawMessage `json:"request"`
	MAC     []byte          `json:"mac"` // base64 on the wire
}

// questionKeyLabel derives the question socket's key from the host's
// coordinator secret, so the secret keys nothing else's MACs here.
const questionKeyLabel = "oa.question-socket.key/v1"

// QuestionMAC is the MAC of one request over a question socket:
// HMAC-SHA256 under HMAC-SHA256(secret, questionKeyLabel) of the
// challenge, the attention id and the request's bytes, each prefixed by
// its length. Compare it with hmac.Equal.
func QuestionMAC(secret, challenge []byte, id string, request []byte) []byte {
	k := hmac.New(sha256.New, secret)
	k.Write([]byte(questionKeyLabel))
	m := hmac.New(sha256.New, k.Sum(nil))
	for _, p := range [][]byte{challenge, []byte(id), request} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		m.Write(n[:])
		m.Write(p)
	}
	return m.Sum(nil)
}

// QuestionReply is one reply over a question socket.
type QuestionReply struct {
	Question *QuestionShown `json:"question,omitempty"`
	Item     *Item          `json:"item,omitempty"`
	Code     blocking.Code  `json:"code,omitempty"`
	Detail   string         `json:"detail,omitempty"`
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

// Answer is a person's answer to an app's question: accept with content,
// decline or cancel.
type Answer struct {
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
}

// askQuestionSocket makes one exchange with the coordinator waiting for
// question id: it reads the challenge and answers it with req and its
// MAC under the host's coordinator secret.
func (r Records) askQuestionSocket(ctx context.Context, id string, req QuestionRequest) (*QuestionReply, error) {
	if _, err := r.LoadOne(ctx, id); err != nil {
		return nil, err
	}
	var secret []byte
	if r.Secret != nil {
		secret, _ = r.Secret()
	}
	if len(secret) == 0 {
		// Without the secret no request is taken: said without the path
		// or the error's text.
		return nil, blocking.New(blocking.QuestionRequestRefused, "this process cannot read the host's coordinator secret")
	}
	raw, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	d := net.Dialer{Timeout: 5 * time.Second}
	conn, err := d.DialContext(ctx, "unix", QuestionSocket(r.Home, id))
	if err != nil {
		return nil, blocking.New(blocking.QuestionNotWaiting, "no coordinator on this host waits for an answer to this item")
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(QuestionIOTimeout))
	dec := json.NewDecoder(io.LimitReader(conn, QuestionMaxBytes))
	// The coordinator's first line is its challenge, or a refusal of this
	// process (another user, a process of a server's tree).
	var first struct {
		QuestionChallenge
		QuestionReply
	}
	if err := dec.Decode(&first); err != nil {
		return nil, blocking.New(blocking.QuestionNotWaiting, "the waiting coordinator did not answer")
	}
	if first.Code != "" {
		return nil, blocking.New(first.Code, "%s", first.Detail)
	}
	if len(first.Challenge) != QuestionChallengeBytes {
		return nil, blocking.New(blocking.QuestionNotWaiting, "the waiting coordinator did not answer")
	}
	signed := SignedQuestionRequest{Request: raw, MAC: QuestionMAC(secret, first.Challenge, id, raw)}
	if err := json.NewEncoder(conn).Encode(signed); err != nil {
		return nil, blocking.New(blocking.QuestionNotWaiting, "the waiting coordinator did not take the request")
	}
	var reply QuestionReply
	if err := dec.Decode(&reply); err != nil {
		return nil, blocking.New(blocking.QuestionNotWaiting, "the waiting coordinator did not answer")
	}
	if reply.Code != "" {
		return nil, blocking.New(reply.Code, "%s", reply.Detail)
	}
	return &reply, nil
}

// ShowQuestion asks the coordinator waiting for question id what the app
// asks, to show it to the person answering.
func (r Records) ShowQuestion(ctx context.Context, id string) (*QuestionShown, error) {
	reply, err := r.askQuestionSocket(ctx, id, QuestionRequest{Op: "show"})
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
func (r Records) AnswerQuestion(ctx context.Context, id string, a Answer, by string) (*Item, error) {
	return r.AnswerQuestionSigned(ctx, id, a, by, nil)
}

// AnswerQuestionSigned is AnswerQuestion with the person's signed
// statement of the answer (nil on a host whose policy names no persons):
// the waiting coordinator holds it to the policy before the app gets
// anything.
func (r Records) AnswerQuestionSigned(ctx context.Context, id string, a Answer, by string, signed *host.SignedDecision) (*Item, error) {
	reply, err := r.askQuestionSocket(ctx, id, QuestionRequest{Op: "answer", Answer: &a, By: by, Signed: signed})
	if err != nil {
		return nil, err
	}
	if reply.Item == nil {
		return nil, errors.New("coordinator: the waiting coordinator sent no item")
	}
	return reply.Item, nil
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

// CheckAnswer holds an answer to what the app may be sent: a closed
// action, and for an accepted form, content matching the app's requested
// schema (which the go-sdk has already held to flat primitive fields).
func CheckAnswer(params *mcp.ElicitParams, a Answer) error {
	switch a.Action {
	case "decline", "cancel":
		if len(a.Content) != 0 {
			return blocking.New(blocking.QuestionAnswerInvalid, "a %s carries no content", a.Action)
		}
		return nil
	case "accept":
	default:
		return blocking.New(blocking.QuestionAnswerInvalid, "the action must be accept, decline or cancel")
	}
	if params.Mode == "url" {
		if len(a.Content) != 0 {
			return blocking.New(blocking.QuestionAnswerInvalid, "a URL request's accept carries no content")
		}
		return nil
	}
	raw, err := json.Marshal(params.RequestedSchema)
	if err != nil {
		return blocking.New(blocking.QuestionAnswerInvalid, "the app's form cannot be read")
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return blocking.New(blocking.QuestionAnswerInvalid, "the app's form cannot be read")
	}
	resolved, err := s.Resolve(nil)
	if err != nil {
		return blocking.New(blocking.QuestionAnswerInvalid, "the app's form cannot be read")
	}
	content := map[string]any{}
	for k, v := range a.Content {
		content[k] = v
	}
	if err := resolved.Validate(content); err != nil {
		// The validator's text quotes values: only the rule is said.
		return blocking.New(blocking.QuestionAnswerInvalid, "the content does not match the fields the app asked for")
	}
	return nil
}
