package fleetcmd

import (
	"bytes"
	"strings"
	"testing"

	"github.com/oa-dev/oa/fleet"
)

// TestApprovalCommandsNameTheLayout: a release waiting for a person is
// named on the printed oa admit and oa bind lines as those commands read
// it — a folder path (the local reference of a repository such as
// oa.dev/clinic) with --oci-layout, quoted when it needs to be; a
// repository in the host's own layout as REPO@DIGEST.
func TestApprovalCommandsNameTheLayout(t *testing.T) {
	const digest = "sha256:" + "ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12"
	for _, c := range []struct{ ref, want string }{
		{"clinic-triage@" + digest, "oa admit clinic-triage@" + digest + " --as NAME"},
		{"/var/oa/oci/oa.dev/clinic@" + digest, "oa admit --oci-layout /var/oa/oci/oa.dev/clinic@" + digest + " --as NAME"},
		{"/home/ada/my oa/oci/oa.dev/clinic@" + digest, "oa admit --oci-layout '/home/ada/my oa/oci/oa.dev/clinic@" + digest + "' --as NAME"},
	} {
		var out bytes.Buffer
		printProvision(&out, &fleet.Result{
			Status:         &fleet.Status{Host: "h1", Fleet: "f", Deployment: "clinic", State: fleet.AwaitingApproval},
			LocalRef:       c.ref,
			NeedsAdmission: true,
		})
		if !strings.Contains(out.String(), "to admit: "+c.want+"\n") {
			t.Errorf("%s: the admit line is not %q:\n%s", c.ref, c.want, out.String())
		}
		wantBind := strings.Replace(strings.TrimSuffix(c.want, " --as NAME"), "oa admit", "oa bind", 1) + " --deployment clinic --model M --as NAME"
		if !strings.Contains(out.String(), "to approve: "+wantBind+"\n") {
			t.Errorf("%s: the bind line is not %q:\n%s", c.ref, wantBind, out.String())
		}
	}
}
