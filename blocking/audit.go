package blocking

// Codes raised by the tamper evidence of a host's runs and receipts and by
// `oa audit verify`, which checks an exported chain offline.
const (
	RunRecordTampered         Code = "run_record_tampered"
	ReceiptCheckpointMismatch Code = "receipt_checkpoint_mismatch"
	ReceiptRunsDisagree       Code = "receipt_runs_disagree"
	ReceiptKeyUnpinned        Code = "receipt_key_unpinned"
	ReceiptBindingUnverified  Code = "receipt_binding_unverified"
	AuditBundleInvalid        Code = "audit_bundle_invalid"
	AuditKeyMismatch          Code = "audit_key_mismatch"
	AuditHostRecordUnverified Code = "audit_host_record_unverified"
	AuditPlanMismatch         Code = "audit_plan_mismatch"
	AuditProjectionMismatch   Code = "audit_projection_mismatch"
)

func init() {
	register(
		Entry{RunRecordTampered, StageCoordinator, "a run record was changed outside the coordinator",
			"The run's stored row does not carry this host's MAC, names another run, or is older than its receipt. Nothing was retried or replayed. Keep the database for the auditor (`oa audit export`), find who wrote to it, and use a new request_id for new work."},
		Entry{ReceiptCheckpointMismatch, StageCoordinator, "the receipt chain does not reach the host's signed checkpoint",
			"Receipts were removed, the database was replaced or emptied, or the checkpoint file in $OA_HOME was removed or edited: the chain is shorter than, or differs from, the last head the host signed. Keep the database and $OA_HOME/receipts.checkpoint for the auditor; compare with an earlier `oa audit export`; do not run new work until the cause is known."},
		Entry{ReceiptRunsDisagree, StageCoordinator, "runs and receipts disagree",
			"A finished run names a receipt the chain does not hold (or one of another run or attempt), a receipt names a run that is gone, or there are fewer runs than the host signed. Keep the database for the auditor; a run or receipt row was removed or edited."},
		Entry{ReceiptKeyUnpinned, StageCoordinator, "the receipt key is not the one the host pinned",
			"The receipt public key beside the receipts is not the key the checkpoint names (or is missing), or the host-signed pin of that key (versions of kind receipt-key) is missing or does not verify with the host key. Restore keys/receipt.pub, or the database, from a backup or an audit export; never trust a receipt key from the folder it protects, and keep the database for the auditor."},
		Entry{ReceiptBindingUnverified, StageCoordinator, "a receipt names no binding that verifies",
			"The receipt's binding digest is not the digest of a host-signed binding of its deployment, or its plan digest is not that binding's plan. A binding row was removed or edited, or the receipt came from another host."},
		Entry{AuditBundleInvalid, StageCoordinator, "the audit bundle cannot be read",
			"The file is not a bundle `oa audit export` writes (a tar holding an OCI image layout with an oa audit manifest), a document is missing, too large or not canonical JSON, or a blob does not match its digest. Export it again from the host."},
		Entry{AuditKeyMismatch, StageCoordinator, "a key given to audit verify is not the one the chain uses",
			"Pass the publisher, authority and host public keys you trust (--publisher-key, --authority-key, --host-key); the bundle's host policy must trust exactly those publisher and authority keys. Keys carried in the bundle are data, never trusted."},
		Entry{AuditHostRecordUnverified, StageCoordinator, "a host record in the bundle does not verify with the host key",
			"An admission, registry signature, connection, binding or checkpoint in the bundle is not signed by the --host-key given, or does not match the document it signs. The bundle was edited or mixes records from another host."},
		Entry{AuditPlanMismatch, StageCoordinator, "the plan recomputed from the bundle is not the bound one",
			"Resolving the bundle's admitted release, signed registry and connections again does not give the plan digest the binding approved: the link named changed. The bundle mixes records of different times or was edited."},
		Entry{AuditProjectionMismatch, StageCoordinator, "the projection recomputed from the bundle is not the host's",
			"Projecting the bundle's Worker IR again does not give the projection digests the bundle lists, or the persona digest the binding approved. The bundle was edited or its projection came from another release."},
	)
}

// AuditBundleTooLarge is raised when an audit bundle's tar, one of its
// entries, its index.json, a manifest or a document is over oa audit
// verify's limits.
const AuditBundleTooLarge Code = "audit_bundle_too_large"

func init() {
	register(
		Entry{AuditBundleTooLarge, StageCoordinator, "the audit bundle is larger than audit verify reads",
			"Nothing was read past the limit: the named tar entry, document or manifest claims more bytes (or the tar more entries, or more bytes in all) than oa audit verify reads by default (4096 entries, 512 MiB a document, 4 MiB a manifest or index.json, 4 GiB in all). A bundle from `oa audit export` of a long-running host may be genuinely large: raise the named limit with --max-entries, --max-document-bytes, --max-manifest-bytes or --max-bundle-bytes; otherwise do not trust the file."},
	)
}
