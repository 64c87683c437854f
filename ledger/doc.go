// Package ledger is a host's signed record of what its coordinators did:
// the run records (each carrying the host MAC), the receipts sealed from
// them, the head checkpoints over the receipt chain and the host-signed
// pins of the receipt key; and the checks that hold the store to that
// record. The coordinator writes through it; `oa receipts` and `audit`
// read and verify through it, without the engine.
//
// Everything is a method of one Ledger, opened once per host (Open) and
// shared: it holds the host, its typed store and its keys, each key read
// (or made) on its first use, so opening reads nothing.
//
// Sealing (SealRun, and FinishRun, which ends the run in the same write
// transaction as its receipt): the receipt of a run's terminal attempt is signed
// with the receipt key (ReceiptSigner, $OA_HOME/keys/receipt.key, with a
// sealed copy so a start needs no key derivation), chained to the receipt
// before by its digest and appended in one write transaction with the
// run's new state and a head checkpoint signed with the same key; the
// checkpoint is also kept in $OA_HOME/receipts.checkpoint (CheckpointFile),
// so a database removed, emptied or replaced by an older copy is caught.
// The host key signs only the receipt key's pin (PinReceiptKey, pin.go),
// once per key on a host.
//
// The log (log.go, ledger/translog): each receipt is also a leaf of the
// host's transparency log — an RFC 6962 Merkle tree whose leaf i is
// receipt i+1's digest, checkpointed in c2sp.org/tlog-checkpoint notes
// signed by the host's Ed25519 log key (LogKey, origin oa/HOST) — in the
// seal's own transaction; ProveReceipt gives the c2sp.org/tlog-proof a
// third party checks offline with the log key alone.
//
// Checking: CheckStore holds the store to the host-signed heads in a few
// indexed reads (the coordinator calls it at session start and before
// every new attempt; CheckCounts adds the row counts). CheckChain and
// VerifyReceipts check the whole chain — every signature, link and
// checkpoint, the bindings receipts name and the runs' agreement with
// them — streaming it in batches from one read snapshot, so memory does
// not grow with the history; VerifyReceiptsWith starts from the head the
// last verify reached (VerifiedFile). A break is a ChainReport naming the
// first broken link with a closed blocking code.
//
// Its typed store (store.go) owns the runs, attention, receipts and used
// request states tables. Teach requests are signed with the receipt
// key; coordinator/attention checks them with the keys the host pinned
// (ReceiptKeyPins).
package ledger
