package ledger

import "github.com/oa-dev/oa/internal/store"

// The history rows the ledger stores packed — each run's state, each
// checkpoint's record — are deflated against the dictionary below, by the
// store's mechanism (store.Packing; see internal/store/pack.go for the
// format and why unpacking gives back the exact bytes). The dictionary is
// the ledger's: these are its rows.

// packedV1 is the first byte of a row packed with packDictV1. A new
// dictionary takes a new byte; this one never changes.
const packedV1 = 0x01

// packDictV1 holds the keys and constant values of the run states,
// receipts and checkpoints the coordinator stores, in the order they
// appear (deflate finds later matches more cheaply). It never changes:
// rows packed with it are read with it.
const packDictV1 = `"type":"oa.receipt-checkpoint/v2","host":"","seq":,"head":"sha256:","runs":,"deployment":"","receiptKey":"sha256:","at":"2026-` +
	`{"at":"2026-T:.Z","attempt":1,"bindingDigest":"sha256:","deployment":"","evidence":[""],"evidenceDigests":{"":"sha256:"},` +
	`"fingerprint":"hmac-sha256:","host":"","job":"","outcome":"done","planDigest":"sha256:","prev":"sha256:","reason":"verified","runId":"run_","seq":,"type":"oa.receipt/v1"}` +
	`{"run_id":"run_","deployment":"","request_id":"","workflow":"","fingerprint":"hmac-sha256:","attempt":1,"status":"terminal","outcome":"done","reason":"verified",` +
	`"completed":[""],"approved":[],"evidence":[""],"digests":{"":"sha256:","":"sha256:"},"plan_digest":"sha256:","binding_digest":"sha256:",` +
	`"owner":{"pid":,"start":""},"receipt_digest":"sha256:","created_at":"2026-T:.Z","updated_at":"2026-T:.Z","mac":"hmac-sha256:"}`

// historyPacking is the ledger's packing of its history rows.
var historyPacking = store.NewPacking(packedV1, packDictV1)

// The store reads and writes the history rows with the ledger's packing
// from the moment the ledger is loaded, before any Open: every program
// that reads a run or a checkpoint — the coordinator, oa receipts, an
// audit export streaming the store (audit.streamDump) — imports the
// ledger, so none reads a packed row without its dictionary.
func init() { store.PackHistoryWith(historyPacking) }
