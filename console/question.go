package console

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/coordinator/attention"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/internal/escape"
)

// A downstream server's question during an effect (an item of kind
// downstream_question) is answered in the console as `oa attention
// answer --person` answers it: the page shows the app's form, rendered
// from the schema the app sent (attention.Records.ShowQuestion, asked of
// the coordinator waiting for the answer, never stored), the person
// signs the statement naming the answer's digest
// (coordinator.AnswerStatement) with ssh-keygen, and the console sends
// the answer with the signature through the waiting coordinator
// (AnswerQuestionSigned), which holds it to the form and the policy
// before the app gets anything. A question in URL mode shows its URL as
// text, never as a link.

// formField is one field of an app's form as the question page shows it.
type formField struct {
	// ID is the input's element id (field-N: the app's names are not
	// element ids).
	ID string
	// Name is the app's field name; the input is named "field." + Name.
	Name, Label, Description string
	// Type is the schema's: string, integer, number or boolean.
	Type     string
	Required bool
	// Enum, when set, are the values a string field takes.
	Enum []string
}

// fieldPrefix prefixes an app's field name in the console's forms.
const fieldPrefix = "field."

// formFields are the fields of the app's form, in name order: string,
// integer, number and boolean properties, strings with an enum as a
// choice. A form that cannot be read is question_answer_invalid.
func formFields(q *attention.QuestionShown) ([]formField, error) {
	if q.Mode == "url" || len(q.Schema) == 0 {
		return nil, nil
	}
	var form struct {
		Properties map[string]struct {
			Type        string   `json:"type"`
			Title       string   `json:"title"`
			Description string   `json:"description"`
			Enum        []string `json:"enum"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(q.Schema, &form); err != nil {
		return nil, blocking.New(blocking.QuestionAnswerInvalid, "the app's form cannot be read")
	}
	names := make([]string, 0, len(form.Properties))
	for n := range form.Properties {
		names = append(names, n)
	}
	slices.Sort(names)
	out := make([]formField, 0, len(names))
	for i, n := range names {
		p := form.Properties[n]
		switch p.Type {
		case "string", "integer", "number", "boolean":
		default:
			return nil, blocking.New(blocking.QuestionAnswerInvalid, "the app's form asks for field %q of a type the console does not show", n)
		}
		label := escape.OneLine(p.Title)
		if label == "" {
			label = escape.OneLine(n)
		}
		f := formField{ID: "field-" + strconv.Itoa(i), Name: n, Label: label, Description: escape.OneLine(p.Description), Type: p.Type, Required: slices.Contains(form.Required, n)}
		if p.Type == "string" {
			f.Enum = p.Enum
		}
		out = append(out, f)
	}
	return out, nil
}

// questionPage is the app's question with its form.
type questionPage struct {
	Item     *attention.Stored
	Question *attention.QuestionShown
	// Message is the app's message, control characters escaped.
	Message string
	// URL is the app's URL in URL mode, shown as text.
	URL     string
	Fields  []formField
	Persons []person
}

// answerPage is where the person signs their answer.
type answerPage struct {
	Item *attention.Stored
	// Action is accept, decline or cancel; Decision what it amounts to.
	Action, Decision string
	// Given are the form's fields as the person gave them, sent again
	// with the signature; Content is the typed answer, shown.
	Given     []givenField
	Content   string
	Person    person
	At        string
	Statement string
	SSH       bool
}

// givenField is one field the person filled in.
type givenField struct{ Name, Value string }

// question reads the item id of the request (a downstream question) and
// asks the coordinator waiting for its answer what the app asks; a
// question no coordinator waits for is question_not_waiting.
func (s *Server) question(r *http.Request) (*attention.Stored, *attention.QuestionShown, error) {
	recs := coordinator.AttentionRecords(s.h)
	item, err := recs.LoadOne(r.Context(), r.PathValue("id"))
	if err != nil {
		return nil, nil, err
	}
	if item.Kind != attention.KindDownstreamQuestion {
		return nil, nil, blocking.New(blocking.ConsoleRequestInvalid, "item %s is not an app's question: decide it from the inbox", item.ID)
	}
	if item.State != attention.Open && item.State != attention.Escalated {
		return nil, nil, blocking.New(blocking.QuestionNotWaiting, "item %s is %s", item.ID, item.State)
	}
	q, err := recs.ShowQuestion(r.Context(), item.ID)
	if err != nil {
		return nil, nil, err
	}
	return item, q, nil
}

func (s *Server) serveQuestion(w http.ResponseWriter, r *http.Request, sess *session) {
	item, q, err := s.question(r)
	if err != nil {
		s.refuse(w, r, sess, http.StatusUnprocessableEntity, err)
		return
	}
	fields, err := formFields(q)
	if err != nil {
		s.refuse(w, r, sess, http.StatusUnprocessableEntity, err)
		return
	}
	page := questionPage{Item: item, Question: q, Message: escape.Controls(q.Message), Fields: fields, Persons: s.persons()}
	if q.Mode == "url" {
		page.URL = escape.Controls(q.URL)
	}
	s.render(w, r, sess, http.StatusOK, "question", page)
}

// answerChoice is an answer read from a form: the item, the app's
// question, the answer (checked against the app's form), the fields as
// given and the person (named in the policy).
type answerChoice struct {
	item   *attention.Stored
	answer attention.Answer
	given  []givenField
	person *host.Person
	name   string
}

// readAnswer reads and checks the form's action, fields and person
// against the app's question, asked again of the waiting coordinator.
// Decline and cancel carry no content: the fields are not read.
func (s *Server) readAnswer(r *http.Request) (*answerChoice, error) {
	if !s.h.Policy.DecidersNamed() {
		return nil, blocking.New(blocking.ConsolePersonsMissing, "the console takes signed answers only")
	}
	item, q, err := s.question(r)
	if err != nil {
		return nil, err
	}
	c := &answerChoice{item: item, answer: attention.Answer{Action: r.PostFormValue("action")}, name: r.PostFormValue("person")}
	switch c.answer.Action {
	case "accept", "decline", "cancel":
	default:
		return nil, blocking.New(blocking.QuestionAnswerInvalid, "action: choose accept, decline or cancel").At("", "action")
	}
	if c.answer.Action == "accept" {
		var set []string
		for _, k := range slices.Sorted(maps.Keys(r.PostForm)) {
			name, ok := strings.CutPrefix(k, fieldPrefix)
			if !ok {
				continue
			}
			vals := r.PostForm[k]
			if len(vals) != 1 {
				return nil, blocking.New(blocking.QuestionAnswerInvalid, "field %q is given more than once", name).At("", k)
			}
			if vals[0] == "" {
				continue // left empty: not answered
			}
			if q.Mode == "url" {
				return nil, blocking.New(blocking.QuestionAnswerInvalid, "a URL request's accept carries no fields").At("", k)
			}
			set = append(set, name+"="+vals[0])
			c.given = append(c.given, givenField{name, vals[0]})
		}
		if q.Mode != "url" {
			if c.answer.Content, err = q.FormContent(set); err != nil {
				return nil, err
			}
		}
	}
	params := &mcp.ElicitParams{Mode: q.Mode, Message: q.Message, URL: q.URL}
	if len(q.Schema) > 0 {
		params.RequestedSchema = q.Schema
	}
	if err := attention.CheckAnswer(params, c.answer); err != nil {
		return nil, err
	}
	if c.person = s.h.Policy.Person(c.name); c.person == nil {
		return nil, blocking.New(blocking.DecisionPersonUnknown, "the host policy names no such person").At("", "person")
	}
	return c, nil
}

// answerStatement is the statement of c made at at, as `oa attention
// answer --person` signs it.
func (s *Server) answerStatement(r *http.Request, c *answerChoice, at time.Time) (*host.DecisionStatement, []byte, error) {
	st, err := coordinator.AnswerStatement(r.Context(), s.h, c.item.ID, c.answer, c.name, at)
	if err != nil {
		return nil, nil, err
	}
	msg, err := st.Message()
	return st, msg, err
}

func (s *Server) serveAnswerPrepare(w http.ResponseWriter, r *http.Request, sess *session) {
	c, err := s.readAnswer(r)
	if err != nil {
		s.refuse(w, r, sess, http.StatusUnprocessableEntity, err)
		return
	}
	at := s.opts.Now().UTC().Truncate(time.Second)
	_, msg, err := s.answerStatement(r, c, at)
	if err != nil {
		s.refuse(w, r, sess, http.StatusUnprocessableEntity, err)
		return
	}
	content := ""
	if c.answer.Action == "accept" && len(c.answer.Content) > 0 {
		b, _ := json.Marshal(c.answer.Content)
		content = indentJSON(b)
	}
	s.render(w, r, sess, http.StatusOK, "answer", answerPage{
		Item: c.item, Action: c.answer.Action, Decision: attention.AnswerDecision(c.answer.Action), Given: c.given, Content: content,
		Person: person{Name: c.name, Display: c.person.Name, Rights: c.person.Rights()}, At: at.Format(time.RFC3339), Statement: string(msg), SSH: c.person.SSHPublicKey() != nil,
	})
}

// serveAnswerStatement sends the answer's statement as a file, byte for
// byte what is signed.
func (s *Server) serveAnswerStatement(w http.ResponseWriter, r *http.Request, sess *session) {
	c, err := s.readAnswer(r)
	if err == nil {
		var at time.Time
		if at, err = readAt(r); err == nil {
			var msg []byte
			if _, msg, err = s.answerStatement(r, c, at); err == nil {
				w.Header().Set("Content-Type", "text/plain; charset=utf-8")
				w.Header().Set("Content-Disposition", `attachment; filename="statement"`)
				_, _ = w.Write(msg)
				return
			}
		}
	}
	s.refuse(w, r, sess, http.StatusUnprocessableEntity, err)
}

// serveAnswer sends the signed answer: the statement is made again from
// the form's item, answer, person and time (none is taken back from the
// page), the signature is the person's, and the waiting coordinator
// holds both to the app's form and the policy before the app gets
// anything; a refusal sends nothing, and the question may be answered
// again.
func (s *Server) serveAnswer(w http.ResponseWriter, r *http.Request, sess *session) {
	item, err := s.answer(r)
	if err != nil {
		s.refuse(w, r, sess, http.StatusUnprocessableEntity, err)
		return
	}
	http.Redirect(w, r, "/?decided="+item.ID, http.StatusSeeOther)
}

func (s *Server) answer(r *http.Request) (*attention.Item, error) {
	c, err := s.readAnswer(r)
	if err != nil {
		return nil, err
	}
	at, err := readAt(r)
	if err != nil {
		return nil, err
	}
	st, _, err := s.answerStatement(r, c, at)
	if err != nil {
		return nil, err
	}
	sig, err := readSignature(r)
	if err != nil {
		return nil, err
	}
	sd := &host.SignedDecision{Statement: *st, Key: c.person.KeyOf(""), Scheme: host.SchemeSSH, Signature: sig}
	if c.person.SSHPublicKey() == nil {
		sd.Scheme, sd.Signature = host.SchemeCosign, strings.TrimSpace(sig)
	}
	return coordinator.AttentionRecords(s.h).AnswerQuestionSigned(r.Context(), c.item.ID, c.answer, c.name, sd)
}
