package host_test

import (
	"strings"
	"testing"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/host"
)

// TestPolicyNotify: a notify section loads with a command and a webhook;
// a relative program, plain http off loopback, a URL with a password or
// an empty section is refused at its field.
func TestPolicyNotify(t *testing.T) {
	base := host.StarterPolicy(host.InitOptions{Host: "h", Publishers: map[string][]byte{"acme": newPub(t)}, Authorities: map[string][]byte{"lab": newPub(t)}})
	p, err := loadText(t, base+"\nnotify: {command: [\"/usr/local/bin/page\", \"--team\", \"ward\"], webhook: \"http://127.0.0.1:9/hook\"}\n")
	if err != nil || p.Notify == nil || p.Notify.Command[0] != "/usr/local/bin/page" || p.Notify.Webhook != "http://127.0.0.1:9/hook" {
		t.Fatalf("notify: %+v %v", p, err)
	}
	for name, c := range map[string]struct{ section, field string }{
		"relative program": {`{command: ["page"]}`, "notify.command.0"},
		"plain http":       {`{webhook: "http://hooks.example/x"}`, "notify.webhook"},
		"password":         {`{webhook: "https://u:p@hooks.example/x"}`, "notify.webhook"},
		"empty":            {`{}`, "notify"},
	} {
		_, err := loadText(t, base+"\nnotify: "+c.section+"\n")
		if !blocking.Has(err, blocking.PolicyNotifyInvalid) || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
