package blocking

// Codes raised while compiling a bundle or checking Worker IR.
const (
	BundleUnreadable         Code = "bundle_unreadable"
	BundlePackageInvalid     Code = "bundle_package_invalid"
	BundleSyntax             Code = "bundle_syntax"
	BundleImportForbidden    Code = "bundle_import_forbidden"
	BundleSchemaViolation    Code = "bundle_schema_violation"
	BundleIncomplete         Code = "bundle_incomplete"
	SkillDocsMissing         Code = "skill_docs_missing"
	SkillDocInvalid          Code = "skill_doc_invalid"
	CustomerStateToken       Code = "customer_state_token"
	CustomerStatePrivateKey  Code = "customer_state_private_key"
	CustomerStateJWT         Code = "customer_state_jwt"
	CustomerStateHighEntropy Code = "customer_state_high_entropy"
	CustomerStateEmail       Code = "customer_state_email"
	CustomerStatePhone       Code = "customer_state_phone"
	CustomerStateDigitRun    Code = "customer_state_digit_run"
	CustomerStateCredURL     Code = "customer_state_credential_url"
	CustomerStateFieldName   Code = "customer_state_field_name"
	EvaluatorSyntax          Code = "evaluator_syntax"
	EvaluatorImportForbidden Code = "evaluator_import_forbidden"
	EvaluatorInvalid         Code = "evaluator_invalid"
	EvaluatorKindMismatch    Code = "evaluator_kind_mismatch"
	ReferenceUnknown         Code = "reference_unknown"
	StepRiskMismatch         Code = "step_risk_mismatch"
	DuplicateName            Code = "duplicate_name"
	CapabilityOutsideCeiling Code = "capability_outside_ceiling"
	IRMalformed              Code = "ir_malformed"
	IRSchemaViolation        Code = "ir_schema_violation"
	IRNotNormalized          Code = "ir_not_normalized"
	IRDigestMismatch         Code = "ir_digest_mismatch"
	ProtocolUnsupported      Code = "protocol_unsupported"
	ToolNameTooLong          Code = "tool_name_too_long"
	ToolNameClash            Code = "tool_name_clash"
)

func init() {
	const customerState = " A package carries method and limits, never customer state: move the value to the host (a connection, a secret file or a run input) and refer to it by capability or input name."
	register(
		Entry{BundleUnreadable, StageCompile, "bundle folder cannot be read",
			"Pass the path of a bundle folder: .cue files of package worker and a skills/ folder of .md files. `oa init DIR` writes a working one."},
		Entry{BundlePackageInvalid, StageCompile, "bundle files are not one package named worker",
			"Every .cue file of a bundle starts with `package worker`; move other packages out of the folder."},
		Entry{BundleSyntax, StageCompile, "CUE syntax error",
			"Fix the CUE syntax at the position shown; `cue fmt FILE` shows the same error."},
		Entry{BundleImportForbidden, StageCompile, "bundle imports a package outside the pure allow-list",
			"Bundle files may import only pure CUE standard packages (#PurePackage in schemas/bundle.cue); remove the import."},
		Entry{BundleSchemaViolation, StageCompile, "bundle does not match #Bundle",
			"Change the field so it matches its definition in schemas/bundle.cue; `cue vet -c schemas/bundle.cue schemas/vet/bundle_root.cue BUNDLE/*.cue` shows the same error."},
		Entry{BundleIncomplete, StageCompile, "bundle field is missing or not concrete",
			"Give the field a concrete value (a string, number, bool or list, not a type or an open choice)."},
		Entry{SkillDocsMissing, StageCompile, "bundle has no skill docs",
			"Add at least one Markdown file under skills/ in the bundle folder describing how the worker's jobs are used."},
		Entry{SkillDocInvalid, StageCompile, "skill doc is not usable",
			"Skill docs are non-empty UTF-8 Markdown files named with lower-case letters, digits, '.', '_' or '-' and ending in .md."},
		Entry{CustomerStateToken, StageCompile, "value has the shape of an API key or token", "Remove the credential." + customerState},
		Entry{CustomerStatePrivateKey, StageCompile, "value contains a PEM private key", "Remove the key." + customerState},
		Entry{CustomerStateJWT, StageCompile, "value contains a JSON Web Token", "Remove the token." + customerState},
		Entry{CustomerStateHighEntropy, StageCompile, "value contains a long high-entropy string that looks like a secret", "Remove the string; if it is not a secret, split it into words." + customerState},
		Entry{CustomerStateEmail, StageCompile, "value contains an email address", "Remove the address." + customerState},
		Entry{CustomerStatePhone, StageCompile, "value contains a phone number", "Remove the number." + customerState},
		Entry{CustomerStateDigitRun, StageCompile, "prose contains a run of five or more digits", "Remove the number (an account, record or case number is customer state)." + customerState},
		Entry{CustomerStateCredURL, StageCompile, "value contains a URL with credentials", "Remove the user, password or token from the URL." + customerState},
		Entry{CustomerStateFieldName, StageCompile, "field name refers to a connection, account, password or secret", "Rename or remove the field: connections, accounts and secrets belong to the host, not the package." + customerState},
		Entry{EvaluatorSyntax, StageCompile, "evaluator expression is not valid CUE",
			"Write expr as one CUE expression (a struct for arguments, a bool for a predicate); the position inside the expression is shown."},
		Entry{EvaluatorImportForbidden, StageCompile, "evaluator uses a package outside the pure allow-list",
			"List only pure standard packages (#PurePackage in schemas/bundle.cue) in the evaluator's imports, and use only those."},
		Entry{EvaluatorInvalid, StageCompile, "evaluator expression does not evaluate",
			"Refer only to declared inputs (input.NAME), earlier steps (steps.ID) and, in a check's predicate, result; arguments must be a struct and predicates a bool."},
		Entry{EvaluatorKindMismatch, StageCompile, "evaluator of the wrong kind",
			"A step's args must name an evaluator of kind \"arguments\" and its predicate one of kind \"predicate\"."},
		Entry{ReferenceUnknown, StageCompile, "reference to something not declared",
			"Declare the capability, evaluator or evidence the field names, or correct the name."},
		Entry{StepRiskMismatch, StageCompile, "read or check step through a consequential capability",
			"Read and check steps may only use read_only capabilities; use an effect step for a consequential one, and read it back through a read_only capability."},
		Entry{DuplicateName, StageCompile, "name used twice",
			"Give every step of a job its own id and every check its own evidence name."},
		Entry{CapabilityOutsideCeiling, StageCompile, "capability outside the package ceiling",
			"Add the capability key (or a prefix.* pattern) to ceiling.capabilities and make sure its risk is within ceiling.max_risk, or remove the capability."},
		Entry{IRMalformed, StageCompile, "Worker IR does not decode strictly",
			"The IR must be one JSON object of #Worker with no unknown or duplicate fields; re-create it with `oa compile`."},
		Entry{IRSchemaViolation, StageCompile, "Worker IR does not match #Worker",
			"Re-create the IR with `oa compile` from its bundle; do not edit IR by hand."},
		Entry{IRNotNormalized, StageCompile, "Worker IR is not normalized",
			"Lists in IR are sorted and free of duplicates; re-create it with `oa compile`."},
		Entry{IRDigestMismatch, StageCompile, "digest inside Worker IR does not match its content",
			"An evaluator source or a document text was changed after compiling; re-create the IR with `oa compile`."},
		Entry{ProtocolUnsupported, StageCompile, "worker protocol not supported",
			"This oa speaks protocol oa.worker/v1; set protocol to it or use an oa that speaks the package's protocol."},
		Entry{ToolNameTooLong, StageCompile, "a read-only capability's MCP tool name is longer than MCP clients accept",
			"A read-only capability is served as an MCP tool named after its key with each '.' as '_' (records.read is records_read); MCP clients accept at most 64 characters of [a-zA-Z0-9_-]. Shorten the capability key."},
		Entry{ToolNameClash, StageCompile, "two read-only capabilities (or one and a coordinator tool) would be served under one MCP tool name",
			"A read-only capability is served as an MCP tool named after its key with each '.' as '_', so a.b_c and a_b.c are both a_b_c, and list.workflows would be the coordinator's list_workflows. Rename one of the capability keys."},
	)
}

// Codes raised while compiling a bundle that concern its evaluation.
const (
	BundleInvalid   Code = "bundle_invalid"
	EvaluatorUnused Code = "evaluator_unused"
)

func init() {
	register(
		Entry{BundleInvalid, StageCompile, "bundle does not evaluate",
			"Fix the CUE error at the position shown (a conflict between two values, or a reference to something undefined); `cue eval BUNDLE/*.cue` shows the same error."},
		Entry{EvaluatorUnused, StageCompile, "evaluator not used by any step",
			"Name the evaluator in a step's args or predicate, or remove it: a package carries no code that never runs."},
	)
}

// More codes of the compile stage.
const (
	IRUnreadable           Code = "ir_unreadable"
	SourceDateEpochInvalid Code = "source_date_epoch_invalid"
	KeyPasswordMissing     Code = "key_password_missing"
)

func init() {
	register(
		Entry{IRUnreadable, StageCompile, "the IR file cannot be read",
			"Pass the path of a file written by `oa compile`."},
		Entry{SourceDateEpochInvalid, StageOCI, "SOURCE_DATE_EPOCH is not a Unix time",
			"Set SOURCE_DATE_EPOCH to a non-negative number of seconds since 1970 (reproducible-builds.org), or unset it for a manifest with no time at all."},
		Entry{KeyPasswordMissing, StageOCI, "no password for the key and no terminal to ask on",
			"Set COSIGN_PASSWORD (it may be empty) or run the command on a terminal."},
	)
}
