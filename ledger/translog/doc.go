// Package translog is a host's transparency log of its receipts: an
// append-only Merkle tree in the C2SP formats, kept in the host's SQLite
// store, and the offline checks a third party runs on what it publishes.
//
//   - Hashing is RFC 6962's (golang.org/x/mod/sumdb/tlog): leaf i is the
//     record hash of entry i, and entry i is the digest of receipt i+1
//     ("sha256:HEX", the text `oa receipts list` prints), so the log
//     reveals only digests; whoever holds a receipt checks it by its
//     digest.
//   - The tree's stored hashes are rows of log_hashes by tlog's stored
//     hash index, the entries rows of log_leaves; ReadTile serves both as
//     c2sp.org/tlog-tiles tiles at their paths (tile/L/N[.p/W],
//     tile/entries/N[.p/W]), so a log can be published and read by any
//     tiles client.
//   - Every append signs a c2sp.org/tlog-checkpoint as a
//     c2sp.org/signed-note with the host's Ed25519 log key
//     ($OA_HOME/keys/log.key, LoadKey), stored with its size in
//     log_checkpoints. The origin is "oa/" + the host's name (Origin):
//     one log per host, not per deployment, because the receipt chain,
//     its numbering and its head are the host's — one tree covers every
//     deployment, so no deployment can be left out of what is witnessed,
//     and a witness keeps one state per host.
//   - Append runs inside the caller's write transaction: the ledger
//     appends a receipt's leaf, its hashes and the new signed checkpoint
//     in the very transaction that stores the receipt, so a receipt never
//     exists without its leaf, whatever crashes.
//   - Prove writes a c2sp.org/tlog-proof (index, inclusion hashes, the
//     signed checkpoint; the entry in its extra line), and VerifyProof
//     checks one offline with nothing but the log's public key (and,
//     when asked, witness keys and a quorum — a count, or a
//     c2sp.org/tlog-policy Group with groups nested in it): the same
//     checks any C2SP verifier makes (tlog.CheckRecord, note.Open).
//   - CheckConsistency holds a newer checkpoint to an older one (same
//     size and another root, or a tree that does not extend the older
//     one, is a fork); the witness (witness.go) cosigns a checkpoint
//     only after that check, as c2sp.org/tlog-witness asks.
//
// Every input read is bounded (MaxProofBytes, MaxCheckpointBytes, key
// files), and every refusal is a blocking code of blocking/translog.go.
package translog
