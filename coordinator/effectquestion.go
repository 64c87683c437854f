package coordinator

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator/attention"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/ledger"
	"github.com/oa-dev/oa/resolve"
)

// A downstream server that elicits during an effect pauses the run for a
// person, like an approval: the attention item (kind
// downstream_question) and the run's move to needs_review
// (downstream_question) are one write, while the app's call waits — its
// effect timeout stopped — for at most questionTTL. The person answers
// through the calling MCP client (the app's own form, forwarded as an
// input request of run_workflow or decide_attention_item) or on the host
// (oa attention answer, through the waiting coordinator's socket,
// questionsock.go); the answer goes to the app unchanged and the run goes
// on to its true outcome. The app's message is held in this process's
// memory only, to be shown to a person; the store, receipts, results and
// the operator channel get digests of the message, the form and the
// answer, and the answer's action.
//
// When no answer comes — the bound passes, the client goes away, the
// coordinator is stopped — the app is answered cancel. If the app's own
// answer then proves what happened (success, or a trusted error word)
// it decides the step as usual; otherwise the run stays paused, reading
// needs_review (downstream_question_unanswered), with the effect in
// flight, until a person closes the item (reject: the run ends
// not_sure_if_saved, downstream_question_closed) or escalates it. A
// coordinator that died while asking leaves the same reading (settle).
// Nothing here ever invents the person's answer or the app's outcome.

// questionTTL bounds how long an effect's call waits for a person's
// answer to its app's question (a variable for tests only).
var questionTTL = 10 * time.Minute

// liveQuestion is a question an app asked during an effect of this
// process, waiting for its answer.
type liveQuestion struct {
	id, runID, connection, capability string
	// params is the app's request as sent: held here only, to show it to
	// a person.
	params *mcp.ElicitParams
	// answer carries the answer for the app; nil when a person's answer
	// could not be recorded (the app is then answered cancel, unanswered).
	answer chan *mcp.ElicitResult
	// done is closed when the app's wait ends, however it ends.
	done chan struct{}
	// refused is set once a request on the question's socket was refused
	// (the operator is told once).
	refused atomic.Bool
}

// questions holds the live questions of this process and, per run, a
// signal closed when the run pauses on one (wait returns early).
type questions struct {
	mu     sync.Mutex
	live   map[string]*liveQuestion
	raised map[string]chan struct{}
}

func (q *questions) put(l *liveQuestion) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.live == nil {
		q.live = map[string]*liveQuestion{}
	}
	q.live[l.id] = l
	ch := q.signalLocked(l.runID)
	select {
	case <-ch:
	default:
		close(ch)
	}
}

// get returns the live question id, or nil.
func (q *questions) get(id string) *liveQuestion {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.live[id]
}

// take removes the live question id: whoever takes it answers it.
func (q *questions) take(id string) *liveQuestion {
	q.mu.Lock()
	defer q.mu.Unlock()
	l := q.live[id]
	if l != nil {
		delete(q.live, id)
		delete(q.raised, l.runID)
	}
	return l
}

// signal returns the channel closed when runID pauses on a question.
func (q *questions) signal(runID string) <-chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.signalLocked(runID)
}

func (q *questions) signalLocked(runID string) chan struct{} {
	if q.raised == nil {
		q.raised = map[string]chan struct{}{}
	}
	ch := q.raised[runID]
	if ch == nil {
		ch = make(chan struct{})
		q.raised[runID] = ch
	}
	return ch
}

// forget drops runID's signal once its execution ends.
func (q *questions) forget(runID string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.raised, runID)
}

// effectCall is one effect's downstream call: its timeout stops while a
// person is asked, and it remembers the question asked.
type effectCall struct {
	dk      *desk
	r       *runState
	step    ir.Step
	entry   resolve.Entry
	timeout time.Duration

	mu       sync.Mutex
	timer    *time.Timer
	callCtx  context.Context
	asked    string // the attention item of the last question
	answered bool   // its answer went to the app
}

// newEffectCall prepares the call of effect step s of r.
func (dk *desk) newEffectCall(r *runState, s ir.Step, entry resolve.Entry) *effectCall {
	return &effectCall{dk: dk, r: r, step: s, entry: entry, timeout: dk.opts.EffectTimeout}
}

// context returns the call's context, carrying its Elicitor and ending
// after the effect timeout (not counting the time a person is asked).
func (e *effectCall) context(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	e.callCtx = ctx
	e.timer = time.AfterFunc(e.timeout, func() { cancel(context.DeadlineExceeded) })
	return connector.WithElicitor(ctx, e.elicit), func() { e.timer.Stop(); cancel(context.Canceled) }
}

// elicit is the Elicitor of an effect call: pause the run for a person,
// wait for the answer (or the bound, or the call's end), answer the app.
func (e *effectCall) elicit(ctx context.Context, params *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	dk := e.dk
	if params == nil {
		return cancelled(), nil
	}
	e.timer.Stop()
	defer e.timer.Reset(e.timeout)
	l, err := dk.raiseQuestion(ctx, e.r, e.step, e.entry, params)
	if err != nil {
		fmt.Fprintf(dk.opts.Operator, "oa coordinator: run %s: step %s: the app's question could not pause the run (answered cancel): %v\n", e.r.RunID, e.step.ID, err)
		return cancelled(), nil
	}
	defer close(l.done)
	e.mu.Lock()
	e.asked, e.answered = l.id, false
	e.mu.Unlock()
	bound := time.NewTimer(questionTTL)
	defer bound.Stop()
	select {
	case res := <-l.answer:
		return e.answeredWith(res), nil
	case <-ctx.Done():
	case <-e.callCtx.Done(): // the call ended: the coordinator is closing
	case <-bound.C:
	}
	if dk.questions.take(l.id) == nil {
		// An answer is being delivered right now: it goes to the app.
		return e.answeredWith(<-l.answer), nil
	}
	fmt.Fprintf(dk.opts.Operator, "oa coordinator: run %s: step %s: no answer to the app's question (attention %s); the app was answered cancel\n", e.r.RunID, e.step.ID, l.id)
	return cancelled(), nil
}

// answeredWith is what the app is sent for an answer taken from the
// question: the person's answer, or cancel when none was recorded.
func (e *effectCall) answeredWith(res *mcp.ElicitResult) *mcp.ElicitResult {
	if res == nil {
		return cancelled()
	}
	e.mu.Lock()
	e.answered = true
	e.mu.Unlock()
	return res
}

// questioned reports whether the app asked a question during the call.
func (e *effectCall) questioned() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.asked != ""
}

// unanswered is the attention item of a question no person answered
// during this call, or "".
func (e *effectCall) unanswered() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.asked == "" || e.answered {
		return ""
	}
	return e.asked
}

// raiseQuestion records the app's question as an attention item and
// pauses r on it, in one write, then makes it answerable here.
func (dk *desk) raiseQuestion(ctx context.Context, r *runState, s ir.Step, entry resolve.Entry, params *mcp.ElicitParams) (*liveQuestion, error) {
	schema, _ := json.Marshal(params.RequestedSchema)
	item := attention.NewQuestion(attention.Pause{ID: newID("att"), RunID: r.RunID, Deployment: r.Deployment, Workflow: r.Workflow, Step: s, Risk: entry.Risk, At: dk.now().UTC()},
		entry.ConnectionID, ir.DigestBytes([]byte(params.Message)), digestJSON(schema))
	b, err := json.Marshal(item)
	if err != nil {
		return nil, err
	}
	err = dk.eng.writer.Pause(context.WithoutCancel(ctx), ledger.AttentionRow{ID: item.ID, RunID: r.RunID, State: b}, func(cur *runState) error {
		if err := cur.pause(contract.ReasonDownstreamQuestion, s.ID, item.ID); err != nil {
			return err
		}
		*r = *cur
		return nil
	})
	if err != nil {
		return nil, err
	}
	dk.notifyPaused(&item)
	l := &liveQuestion{id: item.ID, runID: r.RunID, connection: entry.ConnectionID, capability: s.Capability, params: params, answer: make(chan *mcp.ElicitResult, 1), done: make(chan struct{})}
	stopSocket := dk.serveQuestion(l)
	go func() {
		select {
		case <-dk.life.Done():
		case <-l.done:
		}
		stopSocket()
	}()
	dk.questions.put(l)
	fmt.Fprintf(dk.opts.Operator, "oa coordinator: run %s: step %s: the app behind connection %s asks a person (attention %s, message %s); answer with oa attention answer %s --as NAME\n",
		r.RunID, s.ID, entry.ConnectionID, item.ID, item.MessageDigest, item.ID)
	return l, nil
}

// AnswerQuestion hands a person's answer to the app waiting in this
// process, unchanged, after checking it against the app's form; the item
// records who answered, the action and a digest of the answer, and the
// run goes back to running, in one write. It is the answer given at the
// MCP client: on a host whose policy names persons it is signed with the
// installation's key for its person (Options.Installation).
func (dk *desk) AnswerQuestion(ctx context.Context, id string, a attention.Answer, by, channel string) (*attention.Item, error) {
	return dk.answerQuestion(ctx, id, a, by, channel, nil, true)
}

// answerQuestion is AnswerQuestion with the person's own signed statement
// (from `oa attention answer`), or, atClient, signed for the
// installation's person.
func (dk *desk) answerQuestion(ctx context.Context, id string, a attention.Answer, by, channel string, signed *host.SignedDecision, atClient bool) (*attention.Item, error) {
	l := dk.questions.get(id)
	if l == nil {
		return nil, blocking.New(blocking.QuestionNotWaiting, "no call waits for this question here")
	}
	if err := attention.CheckAnswer(l.params, a); err != nil {
		return nil, err // nothing was sent: it may be answered again
	}
	signed, by, err := dk.holdAnswer(ctx, id, a, by, signed, atClient)
	if err != nil {
		return nil, err // nothing was sent: it may be answered again
	}
	if dk.questions.take(id) != l {
		return nil, blocking.New(blocking.QuestionNotWaiting, "the question was answered or its call ended meanwhile")
	}
	res := &mcp.ElicitResult{Action: a.Action, Content: a.Content}
	raw, _ := json.Marshal(res)
	now := dk.now().UTC()
	item, err := dk.closeQuestion(ctx, id, now, func(item *attention.Stored) {
		item.Answered(a.Action, digestJSON(raw), by, channel, now)
		item.KeepSigned(attention.Decision{Decision: attention.AnswerDecision(a.Action), Signed: signed})
	})
	if err != nil {
		l.answer <- nil // not recorded, so not sent: the app gets cancel
		return nil, err
	}
	l.answer <- res
	fmt.Fprintf(dk.opts.Operator, "oa coordinator: attention %s: %s answered the app's question (%s, answer %s)\n", id, by, a.Action, item.AnswerDigest)
	return &item.Item, nil
}

// questionUnanswered leaves r paused on its question item after the app's
// call ended unanswered with an outcome it does not prove: the effect
// stays in flight and the run reads needs_review until a person decides.
func (dk *desk) questionUnanswered(r *runState, s ir.Step, id string) error {
	err := dk.eng.update(context.Background(), r.RunID, func(cur *runState) error {
		// Paused on the question it raised, the run waits on, now
		// unanswered; a run the question could not pause stops here.
		var err error
		if cur.Status == statePaused {
			err = cur.rewait(contract.ReasonDownstreamQuestionUnanswered)
		} else {
			err = cur.pause(contract.ReasonDownstreamQuestionUnanswered, s.ID, id)
		}
		if err != nil {
			return err
		}
		cur.PausedAt, cur.AttentionID = s.ID, id
		*r = *cur
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(dk.opts.Operator, "oa coordinator: run %s: step %s: the app's question went unanswered and its call ended without a provable outcome; the run waits for a person (attention %s)\n", r.RunID, s.ID, id)
	return &stop{reason: contract.ReasonDownstreamQuestionUnanswered, pause: true}
}

// questionLapsed records that no one answered the question id and the
// app's own answer decided the step: the item lapses and the run, paused
// on it, runs again.
func (dk *desk) questionLapsed(ctx context.Context, id string) error {
	now := dk.now().UTC()
	_, err := dk.closeQuestion(ctx, id, now, func(item *attention.Stored) { item.Lapse(now) })
	return err
}

// closeQuestion is the one write that closes question item id while its
// app's call waits here — answered by a person, or lapsed: change moves
// the item, and the run, when paused on this very item, goes back to
// running (still its executor's), in one transaction.
func (dk *desk) closeQuestion(ctx context.Context, id string, now time.Time, change func(*attention.Stored)) (*attention.Stored, error) {
	var item attention.Stored
	err := dk.ledger.Tables().DecideAttention(context.WithoutCancel(ctx), id, func(itemState, runState []byte) ([]byte, []byte, error) {
		if err := json.Unmarshal(itemState, &item); err != nil {
			return nil, nil, err
		}
		r, err := decodeRun(dk.secret, runState)
		if err != nil {
			return nil, nil, err
		}
		change(&item)
		if r.AttentionID == id {
			_ = r.resume(r.Owner) // refused unless paused: then it stays as it is
		}
		r.UpdatedAt = now
		ib, err := json.Marshal(item)
		if err != nil {
			return nil, nil, err
		}
		rb, err := r.encode(dk.secret)
		return ib, rb, err
	})
	return &item, err
}

// provenByApp reports whether an effect's reason, once its app was
// answered cancel, says what happened: success, or a reason whose record
// change is known.
func provenByApp(reason contract.Reason) bool {
	info, _ := reason.Info()
	return reason == "" || info.RecordChanged != contract.ChangedUnknown
}

// settleQuestion gives a run paused on a question whose asking process is
// gone the reading it has: unanswered.
func (dk *desk) settleQuestion(ctx context.Context, r *runState) (*runState, error) {
	gone := func(cur *runState) bool {
		return cur.Status == statePaused && cur.Reason == contract.ReasonDownstreamQuestion &&
			(!alive(cur.Owner) || (cur.Owner == dk.me && dk.questions.get(cur.AttentionID) == nil && !dk.eng.isActive(cur.RunID)))
	}
	if !gone(r) {
		return r, nil
	}
	err := dk.eng.update(ctx, r.RunID, func(cur *runState) error {
		if gone(cur) {
			_ = cur.rewait(contract.ReasonDownstreamQuestionUnanswered) // paused: gone holds it
			// A dead coordinator's socket answers no one.
			_ = os.Remove(attention.QuestionSocket(dk.opts.Home, cur.AttentionID))
		}
		r = cur
		return nil
	})
	return r, err
}

// decideQuestion records a person's decision on a question item: only
// once the app's call is gone, reject closes it (the run ends
// not_sure_if_saved: what the app did is unknown) and escalate hands it
// on; approval is never a decision on a question.
func decideQuestion(ctx context.Context, h hostStore, d attention.Decision, clock func() time.Time) (*attention.Item, error) {
	if clock == nil {
		clock = time.Now
	}
	if err := attention.CheckQuestionDecision(d); err != nil {
		return nil, err
	}
	now := clock().UTC()
	// Only reject or escalate comes here: an escalated question may
	// still be closed, once.
	return onWaitingItem(ctx, h.ledger, d, now, func(item *attention.Stored, r *runState) (bool, error) {
		if r.Reason == contract.ReasonDownstreamQuestion && (alive(r.Owner) || h.live(item.ID)) {
			return false, blocking.New(blocking.QuestionStillWaiting, "the app's call waits for the answer")
		}
		item.DecideQuestion(d, now)
		// r is paused on the item (onWaitingItem holds it): neither
		// transition is refused.
		if d.Decision == contract.DecisionReject {
			_ = r.finish(contract.ReasonDownstreamQuestionClosed)
		} else {
			_ = r.rewait(contract.ReasonEscalated)
		}
		return true, nil
	})
}

// cancelled is the answer the app gets when no person can answer.
func cancelled() *mcp.ElicitResult { return &mcp.ElicitResult{Action: "cancel"} }
