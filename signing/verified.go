package signing

import "github.com/oa-dev/oa/internal/memo"

// A host reads back the records it signed many times a run — the receipt
// key's pin, the last checkpoint from the store and from its file — and
// each read verified the same bytes with the same key again (an ECDSA
// verification and a PEM parse each, about a tenth of a millisecond).
// What verified once verifies always: a verification is a function of the
// key, the signature and the message. So successes are remembered, keyed
// by a digest of all three, and only successes: a signature that fails is
// checked again every time. A signature SignBytes makes is remembered as
// it is made: the host reads back what it just signed (the checkpoint the
// next seal extends). Parsed public keys are remembered the same
// way, by a digest of their PEM.

// maxMemo bounds each memo; a full memo is emptied and fills again, so the
// records read most recently (the ones read again) are the ones kept.
const maxMemo = 4096

var (
	// verified holds the (key, signature, message) triples that verified.
	verified = memo.Bounded[struct{}]{Max: maxMemo}
	// loadedVerifiers holds the verifiers parsed from public key PEMs.
	loadedVerifiers = memo.Bounded[*Verifier]{Max: maxMemo}
)

// verifiedID is what verified remembers a signature under: the key's id,
// the signature and the message, so SignBytes and VerifyBytes key it alike.
func verifiedID(keyID string, sig, msg []byte) memo.ID {
	return memo.IDOf([]byte(keyID), sig, msg)
}
