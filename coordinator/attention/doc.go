// Package attention is the coordinator's person-facing records: the
// attention items a paused run waits on, the decisions people make on
// them, the teach requests they attach, and the host-side client of the
// question socket a waiting coordinator answers on (each request proven
// with the host's coordinator secret over the coordinator's challenge,
// question.go).
//
// It is a sub-folder of the coordinator stage, not a stage of its own:
// the records live in the attention and runs tables, which the ledger's
// store owns (ledger.Store), so the records are read through Rows, which
// their readers give; the coordinator imports this package, never the
// other way.
// What only a running coordinator does — pausing a run, holding an app's
// live question, moving and sealing a run on a decision — stays in the
// engine, which calls the item rules here (Stored.Waits, Stored.Decide,
// Stored.AttachTeach) inside its own write.
package attention
