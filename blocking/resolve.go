package blocking

// Codes raised while reading the host's capability registry and connections
// and resolving a release's capabilities into an execution plan. Each of the
// nine resolution proofs of DESIGN.md has its own codes.
const (
	RegistryUnreadable      Code = "registry_unreadable"
	RegistryInvalid         Code = "registry_invalid"
	RegistryUnsigned        Code = "registry_unsigned"
	RegistrySignatureBroken Code = "registry_signature_mismatch"

	ConnectionUnknown      Code = "connection_unknown"
	ConnectionExists       Code = "connection_exists"
	ConnectionInvalid      Code = "connection_invalid"
	ConnectionUnverifiable Code = "connection_unverifiable"
	ConnectionVerifyFailed Code = "connection_verify_failed"

	// Proof 1.
	CapabilityNotInRegistry Code = "capability_not_in_registry"
	// Proof 2.
	ConnectorNotCanonical Code = "connector_not_canonical"
	// Proof 3.
	ConnectorUnavailable Code = "connector_unavailable"
	// Proof 4.
	RuntimeToolMissing   Code = "runtime_tool_missing"
	RuntimeToolAmbiguous Code = "runtime_tool_ambiguous"
	// Proof 5.
	ConnectionMissing          Code = "connection_missing"
	ConnectionAmbiguous        Code = "connection_ambiguous"
	ConnectionInventoryChanged Code = "connection_inventory_changed"
	// Proof 6.
	ConnectionRevisionChanged Code = "connection_revision_changed"
	// Proof 7.
	RiskMismatch Code = "risk_mismatch"
	// Proof 8.
	ConsequentialNotApproved Code = "consequential_not_approved"
	// Proof 9.
	ToolOutsideCeiling Code = "tool_outside_ceiling"

	AdmissionNotActive Code = "admission_not_active"
)

func init() {
	register(
		Entry{RegistryUnreadable, StageResolve, "host capability registry cannot be read",
			"Write the registry at $OA_HOME/registry.cue (CUE of package host, shaped by #Registry in schemas/host/registry.cue), or pass its path."},
		Entry{RegistryInvalid, StageResolve, "host capability registry does not match #Registry",
			"Change the field so it matches schemas/host/registry.cue; `oa registry check` shows every error with its place."},
		Entry{RegistryUnsigned, StageResolve, "host capability registry is not signed",
			"Review the registry, then sign it with `oa registry sign --as NAME`; nothing resolves against an unsigned registry."},
		Entry{RegistrySignatureBroken, StageResolve, "host capability registry differs from the one signed",
			"The registry changed after it was signed (or its signature does not verify with the host key). Review the change and sign it again with `oa registry sign --as NAME`, then rebind."},
		Entry{ConnectionUnknown, StageResolve, "no connection by that name",
			"List connections with `oa connection list`; add one with `oa connection add-stdio NAME --connector C -- COMMAND ARGS…` or `oa connection add-remote NAME URL --connector C`."},
		Entry{ConnectionExists, StageResolve, "a connection by that name exists",
			"Choose another name, or pass --replace to give the connection a new configuration (its revision goes up and it must be verified again)."},
		Entry{ConnectionInvalid, StageResolve, "connection settings are invalid",
			"Give a name of lower-case letters, digits and dashes, a connector id, and the command after --; secrets go in --env NAME or a 0600 --secret-file, never on the command line."},
		Entry{ConnectionUnverifiable, StageResolve, "a stored connection record does not verify with the host key",
			"The connection's row was changed outside oa. Re-create it with `oa connection add-stdio NAME --replace …` (or `add-remote`) and verify it again; check who can write $OA_HOME."},
		Entry{ConnectionVerifyFailed, StageResolve, "the connection's server could not be verified",
			"Start the server's command by hand to see why it fails (its stderr is shown to the operator by `oa connection verify`), fix it, and verify again. The connection reads as offline until then."},
		Entry{CapabilityNotInRegistry, StageResolve, "capability not in the host's capability registry",
			"Add the capability to the host registry with its risk and description, sign the registry, and resolve again — or do not deploy this package here."},
		Entry{ConnectorNotCanonical, StageResolve, "connector named by an alias or unknown id",
			"Name connectors by their canonical id in runtime tools and connections; aliases are listed in the registry only so they can be refused."},
		Entry{ConnectorUnavailable, StageResolve, "connector not available, connected or enabled",
			"Mark the connector available and enabled in the registry once it really is, sign the registry, and make sure a verified connection to it is online."},
		Entry{RuntimeToolMissing, StageResolve, "no enabled runtime tool performs the capability",
			"Add (or enable) exactly one runtime tool for the capability in the host registry and sign it."},
		Entry{RuntimeToolAmbiguous, StageResolve, "more than one enabled runtime tool performs the capability",
			"Disable all but one runtime tool for the capability in the host registry and sign it; ambiguity never picks one."},
		Entry{ConnectionMissing, StageResolve, "no online, verified, enabled connection can perform the capability",
			"Add a connection to the tool's connector, verify it with `oa connection verify NAME --as NAME` and enable it; its verified tool list must include the runtime tool."},
		Entry{ConnectionAmbiguous, StageResolve, "more than one connection can perform the capability",
			"Disable all but one connection to the connector with `oa connection disable NAME`; ambiguity never picks one."},
		Entry{ConnectionInventoryChanged, StageResolve, "the connection's live tool list differs from the verified one",
			"The downstream server's tools, schemas or annotations changed. Review the change, run `oa connection verify NAME --as NAME` (the revision goes up) and bind again."},
		Entry{ConnectionRevisionChanged, StageResolve, "the connection's revision or authority is not the one verified or bound",
			"The connection's configuration or verification changed. Verify it again with `oa connection verify NAME --as NAME`, review the new plan and bind again."},
		Entry{RiskMismatch, StageResolve, "tool, host registry and package disagree on effect risk",
			"Make the registry capability, the runtime tool and the downstream tool's readOnlyHint agree with the package's risk; a host may never treat a consequential effect as read-only."},
		Entry{ConsequentialNotApproved, StageBind, "a consequential capability lacks a person's exact approval",
			"Review the plan and approve it with `oa bind REF@sha256:… --deployment NAME --model M --as NAME` (confirm on a terminal, or --yes)."},
		Entry{ToolOutsideCeiling, StageResolve, "a connector tool sits outside the package ceiling",
			"Disable the tool in the host registry (enabled: false) or register it there; a connection the package uses may expose nothing beyond the package's ceiling."},
		Entry{AdmissionNotActive, StageResolve, "the release is not actively admitted on this host",
			"Run `oa admissions show DIGEST` to see why (missing, expired, revoked, mismatched, unverifiable), admit the exact release with `oa admit`, and resolve again."},
	)
}

// Codes raised while binding a plan and checking a binding.
const (
	BindNotApproved     Code = "bind_not_approved"
	BindingMissing      Code = "binding_missing"
	BindingUnverifiable Code = "binding_unverifiable"
	PlanDigestMismatch  Code = "plan_digest_mismatch"
	DeploymentInvalid   Code = "deployment_invalid"
)

func init() {
	register(
		Entry{BindNotApproved, StageBind, "the plan was not approved",
			"Review the plan `oa resolve` prints, then bind it with a confirmation on a terminal or with --yes; nothing binds without a person's approval."},
		Entry{BindingMissing, StageBind, "no binding for this deployment",
			"Bind an admitted release to the deployment with `oa bind REF@sha256:… --deployment NAME --model M --as NAME`."},
		Entry{BindingUnverifiable, StageBind, "the stored binding does not verify with the host key",
			"The binding's row was changed outside oa. Bind the deployment again after reviewing its plan; check who can write $OA_HOME."},
		Entry{PlanDigestMismatch, StageBind, "the recomputed plan is not the approved one",
			"Something the plan depends on changed since a person approved it (`oa bind inspect DEPLOYMENT` names the link). Review the new plan and bind again, or restore what changed."},
		Entry{DeploymentInvalid, StageBind, "deployment or model name is invalid",
			"Name a deployment with lower-case letters, digits and single dashes (at most 63), and a model with letters, digits and . _ : / - (at most 128)."},
	)
}

// Codes raised by the coordinator.
const (
	RequestStateInvalid Code = "request_state_invalid"
	RunUnknown          Code = "run_unknown"
	AttentionUnknown    Code = "attention_unknown"
	AttentionDecided    Code = "attention_decided"
	DecisionInvalid     Code = "decision_invalid"
	RequestIDInvalid    Code = "request_id_invalid"
	ReceiptChainBroken  Code = "receipt_chain_broken"
)

func init() {
	register(
		Entry{RequestStateInvalid, StageCoordinator, "the request state is forged, expired or used",
			"Start the approval again from the run: the coordinator issues a fresh, single-use request state; a client can never make one up."},
		Entry{RunUnknown, StageCoordinator, "no run by that id",
			"Use a run_id returned by run_workflow on this deployment."},
		Entry{AttentionUnknown, StageCoordinator, "no attention item by that id",
			"List open items with list_needs_attention (or `oa attention list`)."},
		Entry{AttentionDecided, StageCoordinator, "the attention item was already decided",
			"A decision is final; see the run with get_run (or `oa attention show ID`)."},
		Entry{DecisionInvalid, StageCoordinator, "the decision cannot be made this way",
			"Decide with approve, reject or escalate and name the person (--as NAME). Approval needs a person: through MCP form elicitation or `oa attention approve ID --as NAME`."},
		Entry{RequestIDInvalid, StageCoordinator, "request_id is missing or malformed",
			"Give every run a request_id of 1 to 128 letters, digits and . _ : - ; reuse it only to ask about the same request."},
		Entry{ReceiptChainBroken, StageCoordinator, "the receipt chain is broken",
			"A receipt was changed, removed or signed by another key at the link named. Keep the database for the auditor; do not append to it until the cause is known."},
	)
}
