package coordinator

// JudgeQuestionPeer exposes the question socket's peer decision, read
// under a /proc of the test's making.
var JudgeQuestionPeer = judgeQuestionPeer
