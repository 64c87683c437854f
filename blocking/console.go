package blocking

// Codes of oa console (issue 38): the local page where people decide on
// paused runs, look back at the history and see the chain. Each refusal
// changes nothing.
const (
	ConsoleListenUnsafe   Code = "console_listen_unsafe"
	ConsoleTLSInvalid     Code = "console_tls_invalid"
	ConsoleLoginRefused   Code = "console_login_refused"
	ConsoleHostRefused    Code = "console_host_refused"
	ConsoleCSRFRefused    Code = "console_csrf_refused"
	ConsoleRequestInvalid Code = "console_request_invalid"
	ConsolePersonsMissing Code = "console_persons_missing"
)

func init() {
	register(
		Entry{ConsoleListenUnsafe, StageCoordinator, "the console would listen beyond this machine without TLS",
			"oa console listens on loopback (127.0.0.1, ::1, localhost) by default. To serve it to other machines give --tls-cert FILE and --tls-key FILE (a certificate for the name people type) and --name NAME for each name they reach it by; without TLS its login token and session cookie would cross the network in the clear. Or keep it on loopback and reach it through an SSH tunnel (ssh -L 8080:127.0.0.1:8080 HOST)."},
		Entry{ConsoleTLSInvalid, StageCoordinator, "the console's TLS certificate or key cannot be used",
			"--tls-cert and --tls-key go together and name a PEM certificate (chain) and its private key. Check both files are readable and belong together (openssl x509 -noout -pubkey -in CERT; openssl pkey -pubout -in KEY)."},
		Entry{ConsoleLoginRefused, StageCoordinator, "no valid console login",
			"The page needs a session: open the URL oa console printed (with its login token) once in this browser. The token works once; a used, mistyped or missing token, or a session that expired or ended when oa console stopped, is refused. Restart oa console for a new token."},
		Entry{ConsoleHostRefused, StageCoordinator, "the request named a host this console does not serve",
			"The Host header of the request is not the address oa console listens on (or a --name given to it). A page of another site that resolves its own name to this machine (DNS rebinding) is refused this way. Open the URL oa console printed; when people reach it by another name, give that name with --name."},
		Entry{ConsoleCSRFRefused, StageCoordinator, "the form did not come from this console's page",
			"Every form the console serves carries a token of the browser's session; this request had none or another session's. Reload the page and submit the form again. A form posted by another site is refused this way."},
		Entry{ConsoleRequestInvalid, StageCoordinator, "the console request is malformed",
			"A field of the form is missing, not one of the choices offered, or too large (the request body, a signature, a teach text or a filter). Reload the page and use its form; the detail names the field."},
		Entry{ConsolePersonsMissing, StageCoordinator, "this host's policy names no persons who decide",
			"The console records only decisions signed by a person the host policy names (persons in policy.cue, with their ssh_key or key and what they may decide). Name the people who decide in the policy, or decide with oa attention approve|reject|… --as NAME on this host, recorded unverified."},
	)
}
