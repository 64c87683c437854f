package blocking

// Codes of the host's transparency log of receipts (ledger/translog,
// issue 41): its key, its proofs, its witnesses and the forks they catch.
const (
	LogKeyInvalid           Code = "log_key_invalid"
	LogProofInvalid         Code = "log_proof_invalid"
	LogCheckpointUnverified Code = "log_checkpoint_unverified"
	LogWitnessQuorum        Code = "log_witness_quorum"
	LogForked               Code = "log_forked"
	LogEntryUnknown         Code = "log_entry_unknown"
	LogChainDisagree        Code = "log_chain_disagree"
)

func init() {
	register(
		Entry{LogKeyInvalid, StageCoordinator, "the log key is malformed or names another log",
			"A log or witness key (a file under $OA_HOME/keys, or a key given with --log-key or --witness-key) is not a c2sp.org/signed-note Ed25519 key, is larger than a key can be, or names another origin than the log's (oa/HOST). Give the public key the host printed (`oa receipts log-key`, keys/log.pub), one line NAME+HASH+BASE64; a host whose log.key was replaced keeps its old checkpoints, which no longer verify: restore the key from a backup."},
		Entry{LogProofInvalid, StageCoordinator, "the proof is not a valid tlog-proof for this entry",
			"The file is not a c2sp.org/tlog-proof (first line c2sp.org/tlog-proof@v1, then an optional extra line, index N, one base64 SHA-256 hash a line, an empty line and the checkpoint), is larger than a proof can be, its index is not below the checkpoint's size, it proves another entry than the one asked for, or its inclusion hashes do not lead from the entry to the checkpoint's root. The proof was edited or cut; ask the host for a new one (`oa receipts prove DIGEST`)."},
		Entry{LogCheckpointUnverified, StageCoordinator, "the checkpoint is not signed by the log key",
			"The proof's checkpoint does not verify with the log key given (or the host's keys/log.pub), or its origin is not the key's name. Check that the key is the host's log key, obtained from the host's operator out of band; a checkpoint that verifies with no key you trust proves nothing."},
		Entry{LogWitnessQuorum, StageCoordinator, "too few witnesses cosigned the checkpoint",
			"The checkpoint carries fewer valid cosignatures from the witness keys given than the quorum asked. Without them nothing shows the host did not show this checkpoint to you alone (a fork). Ask the host for a proof against a newer checkpoint once its witnesses cosigned it, or check the witness keys."},
		Entry{LogForked, StageCoordinator, "two checkpoints of the log disagree: the log forked or was rolled back",
			"Two checkpoints signed by the same log key are of one size with different roots, or the newer tree does not extend the older one (its consistency proof fails), or a checkpoint is smaller than one seen before. The host showed two different histories: keep both checkpoints, they are the evidence; do not trust the host's receipts until its operator explains them."},
		Entry{LogEntryUnknown, StageCoordinator, "the log holds no entry for this receipt",
			"No leaf of this host's log is the receipt digest given (a sha256:HEX digest as `oa receipts list` prints it). Receipts sealed before the log existed are added to it by the next seal; check the digest, or seal a run first."},
		Entry{LogChainDisagree, StageCoordinator, "the log and the receipt chain disagree",
			"The host's log holds more leaves than the chain holds receipts, or a leaf is not the digest of the receipt it stands for. Rows of the log or the receipts were removed or edited: keep the database for the auditor, verify the receipts (`oa receipts verify --full`) and restore from a backup."},
	)
}
