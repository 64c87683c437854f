package host

import (
	"net"
	"net/url"
	"path/filepath"
	"strconv"

	"github.com/oa-dev/oa/blocking"
)

// Notify is how the host tells someone that a run paused for a person
// (the policy's notify section): a command run with the item's id and
// fixed copy in its environment, and/or a webhook posted the same. Its
// shape is #Notify in schemas/host/policy.cue; the coordinator runs it
// (coordinator/notify.go), bounded, never blocking a run.
type Notify struct {
	// Command is the program (an absolute path) and its arguments.
	Command []string `json:"command,omitempty"`
	// Webhook is an https URL, or http on a loopback address.
	Webhook string `json:"webhook,omitempty"`
}

// loadNotify checks the notify section, each refusal located at its
// field.
func (p *Policy) loadNotify(posOf Locator) error {
	n := p.Notify
	if n == nil {
		return nil
	}
	var refused blocking.List
	if len(n.Command) == 0 && n.Webhook == "" {
		refused = append(refused, blocking.New(blocking.PolicyNotifyInvalid, "give command, webhook or both").At(posOf("notify"), "notify"))
	}
	if len(n.Command) > 0 && !filepath.IsAbs(n.Command[0]) {
		refused = append(refused, blocking.New(blocking.PolicyNotifyInvalid, "the command's program is an absolute path").At(posOf("notify", "command", "0"), "notify.command."+strconv.Itoa(0)))
	}
	if n.Webhook != "" && !UsableWebhook(n.Webhook) {
		refused = append(refused, blocking.New(blocking.PolicyNotifyInvalid, "the webhook is an https URL, or http on a loopback address, with no user name or password in it").At(posOf("notify", "webhook"), "notify.webhook"))
	}
	return refused.Err()
}

// UsableWebhook reports whether s is a webhook the host posts to
// (usableURL).
func UsableWebhook(s string) bool { return usableURL(s) }

// usableURL reports whether the host may send to s: https with a host,
// or http on a loopback address; no user info, no fragment.
func usableURL(s string) bool {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.User != nil || u.Fragment != "" {
		return false
	}
	switch u.Scheme {
	case "https":
		return true
	case "http":
		if u.Hostname() == "localhost" {
			return true
		}
		ip := net.ParseIP(u.Hostname())
		return ip != nil && ip.IsLoopback()
	}
	return false
}
