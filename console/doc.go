// Package console serves `oa console`: a local web page for one host
// ($OA_HOME) where the people who decide on paused runs see what they
// decide and decide, look back at the run history, and see a
// deployment's integrity chain and its connections (issue 38).
//
// # What it serves
//
// Inbox: the open attention items, newest first, each with the change
// it proposes (the exact downstream call and what the run read, opened
// with the host's secret as `oa attention show` opens it), the
// workflow's purpose and what done means, and the decisions the item
// allows. History: the runs with their outcome, reason, who decided and
// the receipt digest, filtered as `oa runs` filters, read one page at a
// time (coordinator.HistoryPageOf: newest first, its cost the page's and
// not the history's), with whether each run's own receipt verifies
// (ledger.ReceiptChecker), the receipt chain's verdict (kept until the
// log grows) and a CSV export. Chain: a deployment's
// chain link by link — artifact → Worker IR → publisher signature →
// conformance attestations → admission (admit.IntegrityOf, as `oa status`)
// → plan with its capabilities, tools, connections and confinement
// (bind.Check, as `oa bind inspect`) → binding → receipts with the latest
// checkpoint (ledger.VerifyReceiptsWith, as `oa receipts verify`); the
// console checks nothing itself. Connections: each connection's view as
// `oa connection show` has it. An app's question during an effect
// (downstream_question) is answered from the inbox: the page shows the
// app's message and its form rendered from the schema it sent (string,
// integer, number and boolean fields and enums, labelled; a URL request's
// address as text, never a link), asked of the waiting coordinator and
// never stored; the answer is typed as `oa attention answer --set` types it
// (QuestionShown.FormContent), checked against the form
// (attention.CheckAnswer), signed by the person over the statement naming
// its digest (coordinator.AnswerStatement) and sent with it through the
// waiting coordinator, which holds it to the policy before the app gets
// anything. Fleet, linked only on a host provisioned from a fleet: the
// envelope it applied (sequence, digest, manifest) with its expiry, the
// revocation list applied, and the last status pushed by a sync that left
// it bound, as its own host-signed records have them
// (fleet.ReadHostRecord; no registry is read). Pages are server-rendered
// html/template;
// the one script (static/events.js) listens to server-sent events and
// says when the inbox changed.
//
// # Who decides, and why this way
//
// A decision in the console is the person's own signature over the
// statement `oa attention statement` prints, made with ssh-keygen -Y sign
// -n oa-decision (or cosign sign-blob for a cosign key) and pasted or
// uploaded. The console makes the statement again from the item,
// decision, person and time the form names (it never trusts a statement
// sent back), and records the decision through
// coordinator.DecideAttention, which holds it to the host policy before
// it has any effect — exactly the path of `oa attention DECISION
// --statement --signature`. The other way considered, a console login
// signed once that binds the browser session to a person, would need a
// key the host holds to sign each decision on the person's behalf (as a
// client installation's key does), a new entry in the policy for it, and
// would make a stolen session cookie as good as the person. With the
// signature per decision the console holds no key and can decide for no
// one: the session only lets a browser see the pages and submit forms,
// and the audit verifies each decision with the person's own key.
//
// # How it is kept to its host and its person
//
// It listens on loopback unless given TLS (console_listen_unsafe). The
// URL it prints carries a single-use login token; spending it sets a
// session cookie (HttpOnly, SameSite=Strict, Secure under TLS). Every
// request's Host header must be the console's own (no DNS rebinding:
// console_host_refused); every form carries the session's CSRF token
// (console_csrf_refused); the Content-Security-Policy allows only the
// console's own style sheet and script, forms posted to itself and no
// framing; request bodies, headers and times are bounded. Nothing on a
// page is sent to the agent or to telemetry: the console imports no
// telemetry and serves only the browser that logged in.
package console
