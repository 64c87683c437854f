package blocking

// Codes of the question socket, where a person on the host answers a
// downstream server's question: a request that cannot be shown to come
// from a person is refused. They belong to the coordinator stage.
const (
	QuestionRequestRefused Code = "question_request_refused"
)

func init() {
	register(
		Entry{QuestionRequestRefused, StageCoordinator, "the request on the question socket did not come from a person on this host",
			"Only a person answers an app's question: oa attention question and oa attention answer, run on this host by the user the coordinator runs as (they prove it with the host's coordinator secret under $OA_HOME/keys), or an MCP client that offers elicitation. A request without that proof, or from a process the coordinator started (a downstream server or anything it runs, in any connection) or from another user, is refused; nothing was shown or recorded and the question still waits. If you ran oa attention answer and see this, run it as the coordinator's user with the same OA_HOME, from a shell of your own on the same host (the coordinator's pid namespace: not from another container) rather than from inside a server's process tree; if you did not, a process on this host tried to answer for a person: check the connections whose servers were running (oa connection list)."},
	)
}
