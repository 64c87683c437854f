package blocking

// Codes of a downstream server's question (elicitation) asked during an
// effect: the run pauses for a person, who answers it (accept with
// content, decline, cancel) while the app's call waits, or closes it once
// the call is gone. They belong to the coordinator stage.
const (
	QuestionNotWaiting      Code = "question_not_waiting"
	QuestionStillWaiting    Code = "question_still_waiting"
	QuestionAnswerInvalid   Code = "question_answer_invalid"
	QuestionDecisionInvalid Code = "question_decision_invalid"
)

func init() {
	register(
		Entry{QuestionNotWaiting, StageCoordinator, "no call is waiting for an answer to this question",
			"The app's call that asked is gone (the coordinator that made it stopped, the call ended, or no one answered within 10 minutes), so an answer cannot reach the app and none was recorded. Check the record in the app, then close the item with oa attention reject ID --as NAME (the run ends not_sure_if_saved) or escalate it."},
		Entry{QuestionStillWaiting, StageCoordinator, "the app is still waiting for the person's answer to this question",
			"A question the app asked during a change is answered, not decided: answer it with oa attention answer ID --as NAME (--accept with the fields it asks for, --decline or --cancel), or through an MCP client that offers elicitation (decide_attention_item). Reject and escalate apply once its call is gone."},
		Entry{QuestionAnswerInvalid, StageCoordinator, "the answer does not fit the app's question",
			"An answer is accept (with content matching the fields the app asked for: a flat object of strings, numbers, integers and booleans, see oa attention show ID), decline or cancel. Nothing was sent to the app; answer again."},
		Entry{QuestionDecisionInvalid, StageCoordinator, "a question from the app cannot be approved",
			"A question the app asked during a change is answered by the person (oa attention answer ID --as NAME), never approved; once its call is gone, reject closes it (the run ends not_sure_if_saved) and escalate hands it on. Nothing was recorded."},
	)
}
