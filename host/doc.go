// Package host is the host context every stage from admission on works
// through: the host folder ($OA_HOME), its policy (loaded and checked),
// its host key pair (which signs and verifies every host record), and its
// state database, opened once.
//
// A [Host] hands out no raw database to other stages: the shared
// signed-version chains ([Host.Versions]), the owned process trees
// ([Host.OwnedTrees]), the signed stamp and the audit dump are its own
// methods, and a stage that owns tables (admit's admissions and
// revocations, the coordinator's runs, attention items and receipts)
// builds its typed store on [Host.Store].
//
// [Init] sets a host up: a key pair and a starter policy.
//
// LoadPolicy reads the policy against #Policy (schemas/host/policy.cue):
// keys parsed, an authority never a publisher, fleet keys their own, each
// identity's trusted root read, attestation_rules compiled (rules.go).
// SignRecord, VerifyRecord and ReadVersion sign and verify every stage's host
// records with the host key; KeepSignedCopy keeps the copy of a signed head
// beside the database (receipt checkpoint, revocation head), only ever moved
// forward. ReadLimits gives a host's read limits, or the defaults.
package host
