package coordinator

import (
	"testing"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/contract"
)

// TestOAuthAnswerTooLargeIsCredentials: an authorization server whose
// answer is too large is, for the agent, the app's credentials refused
// (did not run, not safe to retry) before an effect and before a session,
// never app_offline (safe to retry) nor an unclear effect.
func TestOAuthAnswerTooLargeIsCredentials(t *testing.T) {
	err := blocking.New(blocking.OAuthAnswerTooLarge, "test")
	if got := classifyEffect(nil, err, false); got != contract.ReasonAppCredentials {
		t.Fatalf("effect: %s", got)
	}
	if got := sessionReason(err); got != contract.ReasonAppCredentials {
		t.Fatalf("session: %s", got)
	}
}
