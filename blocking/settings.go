package blocking

// Codes of a connection's settings: the plain (non-secret) values a
// server is started with, recorded in the connection's revision, and the
// variables it takes from oa's environment.
const (
	// ConnectionSettingMissing: a variable the connection takes from oa's
	// environment (--env NAME) is not set where oa runs, so its server
	// was not started. Retrying does not help until the operator acts.
	ConnectionSettingMissing Code = "connection_setting_missing"
	// ConnectionSettingInvalid: a --env NAME=VALUE setting is not a
	// variable name with a value, names a variable twice, or names one
	// also taken from the environment or the secret file.
	ConnectionSettingInvalid Code = "connection_setting_invalid"
)

func init() {
	register(
		Entry{ConnectionSettingMissing, StageResolve, "a variable the connection takes from oa's environment is not set",
			"The connection was added with --env NAME, so its server gets NAME from the environment oa runs in, and it is not set there (an MCP client starts oa with its own environment, and oa harness install writes only OA_HOME). For a plain setting, record its value in the connection: `oa connection add-stdio NAME … --env NAME=VALUE --replace`; for a secret, export it where oa starts or use --secret-file."},
		Entry{ConnectionSettingInvalid, StageResolve, "a connection setting cannot be recorded",
			"Give each setting as --env NAME=VALUE with NAME a variable name (letters, digits and _, not starting with a digit), once, and not also as --env NAME or in the secret file. Settings are recorded and shown in clear: put secrets in --secret-file instead."},
	)
}
