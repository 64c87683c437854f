package blocking

// The code of an OAuth authorization server that answered, but with more
// than oa reads. Unlike oauth_server_unreachable it is not an outage:
// retrying gets the same answer. It belongs to the resolve stage like the
// other OAuth codes, and never carries any of the answer.
const (
	OAuthAnswerTooLarge Code = "oauth_answer_too_large"
)

func init() {
	register(
		Entry{OAuthAnswerTooLarge, StageResolve, "the OAuth authorization server answered with more than oa reads; nothing was sent to the MCP server",
			"A token, refresh, registration or metadata answer was larger than 1 MiB, so oa stopped reading it and kept nothing from it. The server did answer, so this is not an outage and retrying gets the same answer: ask the authorization server's operator why its answers are that large (an access token is a few kilobytes), then run oa connection verify NAME (or oa connection login NAME --as NAME). An agent's call is refused app_credentials_refused (did not run, not safe to retry): nothing reached the MCP server."},
	)
}
