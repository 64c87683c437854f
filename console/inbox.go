package console

import (
	"context"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/coordinator/attention"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/internal/escape"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/ledger"
	"github.com/oa-dev/oa/signing"
)

// Handler is the console's pages behind its checks (Host header,
// session, CSRF, bounded bodies), as Serve serves them.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	static, _ := subFS("static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.Handle("GET /{$}", s.secure(s.serveInbox))
	mux.Handle("POST /items/{id}/prepare", s.secure(s.servePrepare))
	mux.Handle("POST /items/{id}/statement", s.secure(s.serveStatement))
	mux.Handle("POST /items/{id}/decide", s.secure(s.serveDecide))
	mux.Handle("GET /items/{id}/question", s.secure(s.serveQuestion))
	mux.Handle("POST /items/{id}/answer/prepare", s.secure(s.serveAnswerPrepare))
	mux.Handle("POST /items/{id}/answer/statement", s.secure(s.serveAnswerStatement))
	mux.Handle("POST /items/{id}/answer", s.secure(s.serveAnswer))
	mux.Handle("GET /history", s.secure(s.serveHistory))
	mux.Handle("POST /history", s.secure(s.serveHistory))
	mux.Handle("POST /history.csv", s.secure(s.serveHistoryCSV))
	mux.Handle("GET /chain", s.secure(s.serveChain))
	mux.Handle("GET /connections", s.secure(s.serveConnections))
	mux.Handle("GET /fleet", s.secure(s.serveFleet))
	mux.Handle("GET /events", s.secure(s.serveEvents))
	// Anything else is refused by the same checks first (a wrong Host
	// or no session is told so before "not found").
	mux.Handle("/", s.secure(func(w http.ResponseWriter, r *http.Request, sess *session) {
		s.refuse(w, r, sess, http.StatusNotFound, blocking.New(blocking.ConsoleRequestInvalid, "no page at %s", r.URL.Path))
	}))
	return mux
}

// InboxItem is one open attention item as the inbox shows it: the item,
// the change it proposes opened (or why it cannot be), and the decisions
// it allows.
type InboxItem struct {
	attention.Item
	Deployment string
	CallDigest string
	Proposed   *attention.ProposedChange
	Unreadable *shownRefusal
	// Verb says what the step does: "would write" or "would read".
	Verb      string
	Arguments string
	Read      []ReadStep
	Decisions []string
}

// ReadStep is what one earlier step read, indented JSON with control
// characters escaped.
type ReadStep struct {
	Step, JSON string
}

// person is a person the policy names, for the decision form.
type person struct {
	Name, Display, Rights string
}

// inboxPage is the inbox.
type inboxPage struct {
	Items []InboxItem
	// Persons are those the policy names; empty on a host whose policy
	// names none, where the console takes no decisions.
	Persons []person
	// Decided is the item a decision was just recorded on.
	Decided *attention.Item
}

// Inbox is the open attention items of the host, newest first, each with
// the change it proposes opened with the host's secret and the decisions
// it allows: what the inbox page shows. It reads only the open items.
func Inbox(ctx context.Context, h *host.Host) ([]InboxItem, error) {
	recs := coordinator.AttentionRecords(h)
	stored, err := recs.Load(ctx, false)
	if err != nil {
		return nil, err
	}
	var secret []byte
	out := make([]InboxItem, 0, len(stored))
	for i := len(stored) - 1; i >= 0; i-- {
		a := &stored[i]
		it := InboxItem{Item: a.Item, Deployment: a.Deployment, CallDigest: a.CallDigest, Decisions: allowed(a)}
		if len(a.Sealed) > 0 {
			if secret == nil {
				if secret, err = ledger.Open(h).Secret(); err != nil {
					return nil, err
				}
			}
			p, err := a.Proposed(secret)
			if refusals := blocking.Refusals(err); refusals != nil {
				r := shownRefusals(refusals)[0]
				it.Unreadable = &r
			} else if err != nil {
				return nil, err
			}
			it.Proposed = p
		}
		if p := it.Proposed; p != nil {
			p.Purpose, p.DoneMeans = escape.OneLine(p.Purpose), escape.OneLine(p.DoneMeans)
			it.Verb = "would write"
			if p.Risk == ir.ReadOnly {
				it.Verb = "would read (it changes nothing)"
			}
			it.Arguments = indentJSON(p.Call.Arguments)
			for _, step := range slices.Sorted(maps.Keys(p.Read)) {
				it.Read = append(it.Read, ReadStep{step, indentJSON(p.Read[step])})
			}
		}
		out = append(out, it)
	}
	slices.SortStableFunc(out, func(a, b InboxItem) int { return b.CreatedAt.Compare(a.CreatedAt) })
	return out, nil
}

// allowed are the decisions item a takes now: a question once its call
// is gone is rejected (closed) or escalated; an approval is approved,
// rejected, taught, skipped where the package declares the step
// skippable, and escalated unless it already was.
func allowed(a *attention.Stored) []string {
	if a.Kind == attention.KindDownstreamQuestion {
		return []string{contract.DecisionReject, contract.DecisionEscalate}
	}
	out := []string{contract.DecisionApprove, contract.DecisionReject}
	if a.Skippable {
		out = append(out, contract.DecisionSkip)
	}
	out = append(out, contract.DecisionTeach)
	if a.State != attention.Escalated {
		out = append(out, contract.DecisionEscalate)
	}
	return out
}

func (s *Server) persons() []person {
	p := s.h.Policy
	out := []person{}
	for _, name := range slices.Sorted(maps.Keys(p.Persons)) {
		per := p.Person(name)
		out = append(out, person{Name: name, Display: per.Name, Rights: per.Rights()})
	}
	return out
}

func (s *Server) serveInbox(w http.ResponseWriter, r *http.Request, sess *session) {
	items, err := Inbox(r.Context(), s.h)
	if err != nil {
		s.refuse(w, r, sess, http.StatusInternalServerError, err)
		return
	}
	page := inboxPage{Items: items, Persons: s.persons()}
	if id := r.URL.Query().Get("decided"); id != "" {
		if it, err := coordinator.AttentionRecords(s.h).Get(r.Context(), id); err == nil {
			page.Decided = it
		}
	}
	s.render(w, r, sess, http.StatusOK, "inbox", page)
}

// signPage is the page where the person signs their decision: the exact
// statement, how to sign it, and the form that takes the signature.
type signPage struct {
	Item      InboxItem
	Decision  string
	Person    person
	At        string
	Statement string
	// SSH is whether the person's key is an SSH key (else cosign).
	SSH bool
}

// choice is a decision on an item read from a form: the item (open), the
// decision (one it allows), the person (named in the policy).
type choice struct {
	item     *attention.Stored
	decision string
	person   *host.Person
	name     string
}

// readChoice reads and checks the form's item, decision and person.
func (s *Server) readChoice(r *http.Request) (*choice, error) {
	if !s.h.Policy.DecidersNamed() {
		return nil, blocking.New(blocking.ConsolePersonsMissing, "the console takes signed decisions only")
	}
	item, err := coordinator.AttentionRecords(s.h).LoadOne(r.Context(), r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	if err := item.Waits(attention.Decision{Decision: contract.DecisionApprove}); err != nil {
		return nil, err
	}
	c := &choice{item: item, decision: r.PostFormValue("decision"), name: r.PostFormValue("person")}
	if !slices.Contains(allowed(item), c.decision) {
		return nil, blocking.New(blocking.ConsoleRequestInvalid, "decision: choose one of %s", strings.Join(allowed(item), ", ")).At("", "decision")
	}
	if c.person = s.h.Policy.Person(c.name); c.person == nil {
		return nil, blocking.New(blocking.DecisionPersonUnknown, "the host policy names no such person").At("", "person")
	}
	return c, nil
}

// statement is the statement of c made at at, as `oa attention
// statement` prints it.
func (s *Server) statement(ctx context.Context, c *choice, at time.Time) (*host.DecisionStatement, []byte, error) {
	st, err := coordinator.StatementFor(ctx, s.h, c.item.ID, c.decision, c.name, at)
	if err != nil {
		return nil, nil, err
	}
	msg, err := st.Message()
	return st, msg, err
}

// readAt reads the statement's time from the form.
func readAt(r *http.Request) (time.Time, error) {
	at, err := time.Parse(time.RFC3339, r.PostFormValue("at"))
	if err != nil {
		return time.Time{}, blocking.New(blocking.ConsoleRequestInvalid, "at: the statement's time is missing or not RFC 3339").At("", "at")
	}
	return at.UTC(), nil
}

func (s *Server) servePrepare(w http.ResponseWriter, r *http.Request, sess *session) {
	c, err := s.readChoice(r)
	if err != nil {
		s.refuse(w, r, sess, http.StatusUnprocessableEntity, err)
		return
	}
	at := s.opts.Now().UTC().Truncate(time.Second)
	_, msg, err := s.statement(r.Context(), c, at)
	if err != nil {
		s.refuse(w, r, sess, http.StatusUnprocessableEntity, err)
		return
	}
	items, err := Inbox(r.Context(), s.h)
	if err != nil {
		s.refuse(w, r, sess, http.StatusInternalServerError, err)
		return
	}
	page := signPage{Decision: c.decision, Person: person{Name: c.name, Display: c.person.Name, Rights: c.person.Rights()}, At: at.Format(time.RFC3339), Statement: string(msg), SSH: c.person.SSHPublicKey() != nil}
	for _, it := range items {
		if it.ID == c.item.ID {
			page.Item = it
		}
	}
	s.render(w, r, sess, http.StatusOK, "sign", page)
}

// serveStatement sends the statement as a file, byte for byte what is
// signed (ssh-keygen -Y sign signs the file as it is).
func (s *Server) serveStatement(w http.ResponseWriter, r *http.Request, sess *session) {
	c, err := s.readChoice(r)
	if err == nil {
		var at time.Time
		if at, err = readAt(r); err == nil {
			var msg []byte
			if _, msg, err = s.statement(r.Context(), c, at); err == nil {
				w.Header().Set("Content-Type", "text/plain; charset=utf-8")
				w.Header().Set("Content-Disposition", `attachment; filename="statement"`)
				_, _ = w.Write(msg)
				return
			}
		}
	}
	s.refuse(w, r, sess, http.StatusUnprocessableEntity, err)
}

// serveDecide records the signed decision: the statement is made again
// from the form's item, decision, person and time (the page never sends
// one back to be trusted), the signature is the person's, and the
// decision is made as `oa attention DECISION --statement --signature`
// makes it (coordinator.DecideAttention), checked against the policy
// before it has any effect.
func (s *Server) serveDecide(w http.ResponseWriter, r *http.Request, sess *session) {
	item, err := s.decide(r)
	if err != nil {
		s.refuse(w, r, sess, http.StatusUnprocessableEntity, err)
		return
	}
	http.Redirect(w, r, "/?decided="+item.ID, http.StatusSeeOther)
}

func (s *Server) decide(r *http.Request) (*attention.Item, error) {
	c, err := s.readChoice(r)
	if err != nil {
		return nil, err
	}
	at, err := readAt(r)
	if err != nil {
		return nil, err
	}
	st, _, err := s.statement(r.Context(), c, at)
	if err != nil {
		return nil, err
	}
	sig, err := readSignature(r)
	if err != nil {
		return nil, err
	}
	text := ""
	if c.decision == contract.DecisionTeach {
		if text = r.PostFormValue("text"); strings.TrimSpace(text) == "" {
			return nil, blocking.New(blocking.ConsoleRequestInvalid, "text: a teach decision says how the package should change").At("", "text")
		}
	}
	sd := &host.SignedDecision{Statement: *st, Key: c.person.KeyOf(""), Scheme: host.SchemeSSH, Signature: sig}
	if c.person.SSHPublicKey() == nil {
		sd.Scheme, sd.Signature = host.SchemeCosign, strings.TrimSpace(sig)
	}
	return coordinator.DecideAttention(r.Context(), s.h, attention.Decision{AttentionID: c.item.ID, Decision: c.decision, By: c.name, Channel: Channel, Text: text, Signed: sd})
}

// Channel is how a decision made in the console is recorded as arriving.
const Channel = "console"

// readSignature is the signature pasted or uploaded, bounded.
func readSignature(r *http.Request) (string, error) {
	sig := r.PostFormValue("signature")
	if r.MultipartForm != nil {
		if files := r.MultipartForm.File["signature_file"]; len(files) > 0 && files[0].Size > 0 {
			if sig != "" {
				return "", blocking.New(blocking.ConsoleRequestInvalid, "signature: paste the signature or upload its file, not both").At("", "signature")
			}
			f, err := files[0].Open()
			if err != nil {
				return "", blocking.New(blocking.ConsoleRequestInvalid, "signature_file: the file cannot be read").At("", "signature_file")
			}
			defer f.Close()
			b, err := io.ReadAll(io.LimitReader(f, signing.MaxSSHSignature+1))
			if err != nil || len(b) > signing.MaxSSHSignature {
				return "", blocking.New(blocking.ConsoleRequestInvalid, "signature_file: over %d bytes", signing.MaxSSHSignature).At("", "signature_file")
			}
			sig = string(b)
		}
	}
	switch {
	case strings.TrimSpace(sig) == "":
		return "", blocking.New(blocking.ConsoleRequestInvalid, "signature: paste the signature ssh-keygen -Y sign wrote (statement.sig), or upload it").At("", "signature")
	case len(sig) > signing.MaxSSHSignature:
		return "", blocking.New(blocking.ConsoleRequestInvalid, "signature: over %d bytes", signing.MaxSSHSignature).At("", "signature")
	}
	// A browser sends a textarea's lines ending \r\n; the armour is read
	// line by line either way, but is kept as ssh-keygen wrote it.
	return strings.ReplaceAll(sig, "\r\n", "\n"), nil
}
