package attention

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/ir"
)

// Item is a paused run waiting for a person.
type Item struct {
	ID         string  `json:"attention_id"`
	RunID      string  `json:"run_id"`
	Workflow   string  `json:"workflow"`
	Step       string  `json:"step"`
	Capability string  `json:"capability"`
	Risk       ir.Risk `json:"risk"`
	// State is open, approved, rejected, escalated or skipped.
	State string `json:"state"`
	// Question is fixed copy naming the step and capability, never values.
	Question  string           `json:"question"`
	DecidedBy string           `json:"decided_by,omitempty"`
	Channel   string           `json:"channel,omitempty"`
	CreatedAt time.Time        `json:"created_at"`
	DecidedAt *time.Time       `json:"decided_at,omitempty"`
	Outcome   contract.Outcome `json:"outcome"`
	// Skippable is whether the package declares the step skippable
	// (skippableWhile), recorded from the IR when the run paused.
	Skippable bool `json:"skippable,omitempty"`
	// TeachRequests counts the teach requests attached to the item; their
	// text is operator text, read with Records.TeachRequestsOf, never
	// shown here.
	TeachRequests int `json:"teach_requests,omitempty"`
	// Kind is "" for an approval and KindDownstreamQuestion for a
	// question the app asked during a change. A question records only
	// the connection it came from and digests of the app's message, of
	// its requested form and of the person's answer; the answer's action
	// (accept, decline, cancel) is a closed word.
	Kind          string `json:"kind,omitempty"`
	Connection    string `json:"connection,omitempty"`
	MessageDigest string `json:"message_digest,omitempty"`
	SchemaDigest  string `json:"schema_digest,omitempty"`
	AnswerAction  string `json:"answer_action,omitempty"`
	AnswerDigest  string `json:"answer_digest,omitempty"`
	// DecidedKey names the key that signed the decision (an SSH
	// fingerprint or a cosign key id); empty when the decision was not
	// signed and DecidedBy is free text.
	DecidedKey string `json:"decided_key,omitempty"`
}

// States of an item.
const (
	Open      = "open"
	Approved  = "approved"
	Rejected  = "rejected"
	Escalated = "escalated"
	Skipped   = "skipped"
	// Answered: the person answered an app's question and the answer
	// went to the app.
	Answered = "answered"
	// Closed: the app's call was gone unanswered and a person closed the
	// question.
	Closed = "closed"
	// Lapsed: no one answered the app's question in time; the app was
	// told cancel and its own answer decided the step.
	Lapsed = "lapsed"
)

// KindDownstreamQuestion is the kind of an attention item raised by a
// downstream server's question during an effect.
const KindDownstreamQuestion = "downstream_question"

// Decision is a person's decision on an attention item.
type Decision struct {
	AttentionID string
	// Decision is one of contract.Decisions.
	Decision string
	// By names the person; Channel is how the decision arrived: "cli",
	// "elicitation" (the person answered the MCP form) or "mcp" (a
	// rejection or escalation relayed by the calling agent).
	By      string
	Channel string
	// Text is a teach decision's request: operator text, bounded by
	// MaxTeachText and scanned for customer state, never shown to the
	// calling agent.
	Text string
	// Signed is the person's signed statement of the decision, checked
	// against the host policy's persons before it has any effect; nil on
	// a host whose policy names none (By is then free text, unverified).
	Signed *host.SignedDecision
}

// Stored is an attention item's durable state, as the coordinator's
// attention table holds it.
type Stored struct {
	Item
	Deployment string `json:"deployment"`
	// Teach holds the item's signed teach requests (operator text).
	Teach []SignedTeachRequest `json:"teach,omitempty"`
	// CallDigest is the keyed digest of the downstream call the paused
	// step would send (CallDigest): an approval or skip on the item
	// holds for that call only, and a teach request names it. Sealed is
	// the item's proposed change, sealed (Propose, Proposed). Both are
	// empty on a question and on an item made before they were kept.
	CallDigest string `json:"call_digest,omitempty"`
	Sealed     []byte `json:"proposed_sealed,omitempty"`
	// Signed holds every signed decision made on the item, in order
	// (signed.go); absent on a host whose policy names no persons.
	Signed []host.SignedDecision `json:"signed_decisions,omitempty"`
}

// CheckDecision refuses a decision that is not one of contract.Decisions
// made by a named person.
func CheckDecision(d Decision) error {
	if !slices.Contains(contract.Decisions, d.Decision) || strings.TrimSpace(d.By) == "" {
		return blocking.New(blocking.DecisionInvalid, "a decision is approve, reject, escalate, skip or teach, by a named person")
	}
	return nil
}

// Waits refuses decision d on an item no longer open for it: an
// escalated item waits for the people it went to, who may still approve,
// reject, skip or teach it, once.
func (s *Stored) Waits(d Decision) error {
	if s.State != Open && !(s.State == Escalated && d.Decision != contract.DecisionEscalate) {
		return blocking.New(blocking.AttentionDecided, "the item is %s", s.State)
	}
	return nil
}

// Decide records approve, reject, escalate or skip on the item, made at
// now; skip only where the package declares the step skippable. The run
// the item pauses is the engine's to move, in the same write.
func (s *Stored) Decide(d Decision, now time.Time) error {
	if d.Decision == contract.DecisionSkip && !s.Skippable {
		return blocking.New(blocking.SkipNotDeclared, "the package does not declare step %s skippable", s.Step)
	}
	s.State = map[string]string{contract.DecisionApprove: Approved, contract.DecisionReject: Rejected,
		contract.DecisionEscalate: Escalated, contract.DecisionSkip: Skipped}[d.Decision]
	s.DecidedBy, s.Channel, s.DecidedAt = d.By, d.Channel, &now
	return nil
}

// Pause names what a new item pauses: its id, the run, the step it waits
// at and the step's risk, and when.
type Pause struct {
	ID, RunID, Deployment, Workflow string
	Step                            ir.Step
	Risk                            ir.Risk
	At                              time.Time
}

// open is the open item of pause p, asking question.
func (p Pause) open(question string) Stored {
	return Stored{Item: Item{ID: p.ID, RunID: p.RunID, Workflow: p.Workflow, Step: p.Step.ID, Capability: p.Step.Capability, Risk: p.Risk,
		State: Open, CreatedAt: p.At, Outcome: contract.OutcomeNeedsReview, Question: question}, Deployment: p.Deployment}
}

// NewApproval is the open item asking a person to approve the step: the
// question is fixed copy naming the step and capability, never values,
// and asks about a change only where the capability makes one.
func NewApproval(p Pause) Stored {
	question := fmt.Sprintf("Approve step %s of workflow %s, which makes a change through the consequential capability %s?", p.Step.ID, p.Workflow, p.Step.Capability)
	if p.Risk == ir.ReadOnly {
		question = fmt.Sprintf("Approve step %s of workflow %s, which reads through the read-only capability %s and changes nothing?", p.Step.ID, p.Workflow, p.Step.Capability)
	}
	s := p.open(question)
	s.Skippable = p.Step.SkippableWhile != ""
	return s
}

// NewQuestion is the open item of a question the app behind connection
// asked during the step: it keeps digests of the app's message and form,
// never their text.
func NewQuestion(p Pause, connection, messageDigest, schemaDigest string) Stored {
	s := p.open(fmt.Sprintf("While making step %s of workflow %s (capability %s), the app behind connection %s asks the person a question. Answer it with oa attention answer, or through an MCP client that offers elicitation.", p.Step.ID, p.Workflow, p.Step.Capability, connection))
	s.Kind, s.Connection, s.MessageDigest, s.SchemaDigest = KindDownstreamQuestion, connection, messageDigest, schemaDigest
	return s
}

// CheckQuestionDecision refuses a decision a question item does not take:
// once the app's call is gone, a question is closed (reject) or
// escalated by a named person; approval is never a decision on it.
func CheckQuestionDecision(d Decision) error {
	switch {
	case strings.TrimSpace(d.By) == "":
		return blocking.New(blocking.DecisionInvalid, "a decision is made by a named person")
	case d.Decision == contract.DecisionApprove:
		return blocking.New(blocking.QuestionDecisionInvalid, "a question is answered, not approved")
	case d.Decision != contract.DecisionReject && d.Decision != contract.DecisionEscalate:
		return blocking.New(blocking.QuestionDecisionInvalid, "once its call is gone, a question is rejected (closed) or escalated")
	}
	return nil
}

// DecideQuestion records reject (the question closes) or escalate on a
// question item, made at now.
func (s *Stored) DecideQuestion(d Decision, now time.Time) {
	s.DecidedBy, s.Channel, s.DecidedAt = d.By, d.Channel, &now
	s.State = Escalated
	if d.Decision == contract.DecisionReject {
		s.State = Closed
	}
}

// Answered records that a person (by, through channel) answered the
// app's question with action at now; answerDigest is the digest of the
// answer sent, whose content is never kept.
func (s *Stored) Answered(action, answerDigest, by, channel string, now time.Time) {
	s.State, s.AnswerAction, s.AnswerDigest = Answered, action, answerDigest
	s.DecidedBy, s.Channel, s.DecidedAt = by, channel, &now
}

// Lapse records that no one answered the open question in time.
func (s *Stored) Lapse(now time.Time) {
	if s.State == Open {
		s.State, s.DecidedAt = Lapsed, &now
	}
}
