package blocking

// Codes of a host's witnesses (issue 41): the policy's witnessing
// section, which names the c2sp.org/tlog-witness witnesses the host
// submits its log's checkpoints to and how many must cosign.
const (
	// PolicyWitnessInvalid: the policy's witnessing section names a
	// witness whose key or URL is unusable, or a quorum it cannot meet,
	// or its c2sp.org/tlog-policy text has a line that is not a rule.
	PolicyWitnessInvalid Code = "policy_witness_invalid"
)

func init() {
	register(
		Entry{PolicyWitnessInvalid, StageAdmit, "a witness in the host policy cannot be used as written",
			"Under witnessing, give each witness its public key as its operator prints it (oa witness key, or a c2sp.org/tlog-cosignature key NAME+HASH+BASE64; each witness its own key) and the base URL its add-checkpoint is served under (https://, or http:// on loopback), and a quorum between 1 and the number of witnesses — in CUE, or as c2sp.org/tlog-policy text (policy_file or policy: `witness NAME VKEY URL`, `group NAME all|any|N MEMBER…` naming witnesses and groups defined above, one `quorum NAME|none`). Check the file with oa policy check."},
	)
}
