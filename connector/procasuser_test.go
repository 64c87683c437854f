package connector_test

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/confine"
	"github.com/oa-dev/oa/connector/proc"
	"github.com/oa-dev/oa/testkit/connectortest"
)

// asUserEnv marks the run of this test binary as an ordinary user that
// TestConfinedAsUser starts, and names the probe built for it.
const asUserEnv = "OA_TEST_AS_USER_PROBE"

// nobody is the user the root run starts the test again as.
const nobody = 65534

// TestConfinedAsUser: an operator who is not root lacks CAP_SYS_ADMIN.
// Where the host allows unprivileged user namespaces, oa gives each server
// pid, mount, IPC and network namespaces inside a user namespace that maps
// only the operator's uid, and the level holds what root's does; with
// them off (OA_USER_NAMESPACES=off, or a host that refuses them) the
// layers that need none still hold on the real kernel: the filesystem and
// network guarantees (Landlock and the seccomp filter: UDP is refused
// without a network namespace), no capability, and the level says which
// guarantees are not held and why. Run as root, the test starts itself
// again as nobody, both ways, so the machine's real non-root path is what
// is tested.
func TestConfinedAsUser(t *testing.T) {
	probe := os.Getenv(asUserEnv)
	if os.Geteuid() == 0 {
		runAsNobody(t, "")
		runAsNobody(t, "off")
		return
	}
	if probe == "" {
		probe = connectortest.Probe(t)
	}
	level, err := connector.Enforcement(connector.Config{Command: "x"})
	if err != nil {
		t.Fatal(err)
	}
	userns := proc.UserNamespaces()
	t.Logf("uid %d, %s=%q: user namespaces %v; level %s", os.Geteuid(), proc.UserNamespacesEnv, os.Getenv(proc.UserNamespacesEnv), userns, level)
	if os.Getenv(proc.UserNamespacesEnv) == "off" && userns {
		t.Fatalf("%s=off, yet servers get user namespaces", proc.UserNamespacesEnv)
	}
	for _, g := range []string{confine.GuaranteeFilesystem, confine.GuaranteeNetwork, confine.GuaranteePrivileges, confine.GuaranteeIPC} {
		if !level.Holds(g) {
			t.Errorf("as uid %d the level does not hold %s: %s", os.Geteuid(), g, level)
		}
	}
	for _, g := range []string{confine.GuaranteeProcesses, confine.GuaranteeSocketFolders} {
		if level.Holds(g) != userns {
			t.Errorf("as uid %d with user namespaces %v the level holds %s: %v", os.Geteuid(), userns, g, level.Holds(g))
		}
	}
	if userns {
		r := hostileOutcomeOf(t, probe, nil)
		for _, name := range []string{"setpriority", "sched_setaffinity", "ptrace", "unshare", "unshare_user", "mknod"} {
			if got := r.Server.Hostile[name]; got != "denied" {
				t.Errorf("in a user namespace: %s %q, want denied", name, got)
			}
		}
		if r.Server.Hostile["CapEff"] != "0000000000000000" || r.Server.Hostile["CapBnd"] != "0000000000000000" {
			t.Errorf("in a user namespace the server keeps capabilities: %v", r.Server.Hostile)
		}
		return
	}
	if len(level.NotHeld) == 0 {
		t.Errorf("the level names nothing not held: %s", level)
	}
	s := newProbeScene(t)
	for _, abi := range []int{1, 4, confine.KernelABI()} {
		t.Setenv(confine.ABIMaxEnv, strconv.Itoa(abi))
		os.Remove(s.target)
		r := runProbeOf(t, probe, s, nil)
		for who, o := range map[string]outcome{"server": r.Server, "child": *r.Child} {
			if o.Read != "denied" || o.Write != "denied" || o.Connect != "denied" || o.UDP != "denied" {
				t.Errorf("%s as uid %d at ABI %d: read %q, write %q, connect %q, udp %q; want all denied", who, os.Geteuid(), abi, o.Read, o.Write, o.Connect, o.UDP)
			}
		}
	}
}

// runAsNobody runs TestConfinedAsUser again, in a copy of this test
// binary that nobody may run, as nobody, with the probe built here and
// OA_USER_NAMESPACES set to userns.
func runAsNobody(t *testing.T, userns string) {
	shared, err := os.MkdirTemp("", "oa-asuser-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(shared) })
	tmp := filepath.Join(shared, "tmp")
	if err := os.Mkdir(tmp, 0o777); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{shared, tmp} {
		if err := os.Chmod(p, 0o777|os.ModeSticky); err != nil {
			t.Fatal(err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin, probe := filepath.Join(shared, "connector.test"), filepath.Join(shared, "probeserver")
	for src, dst := range map[string]string{self: bin, connectortest.Probe(t): probe} {
		if err := copyFile(src, dst); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "-test.run", "^TestConfinedAsUser$", "-test.v")
	cmd.Dir = tmp
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + tmp, "TMPDIR=" + tmp, asUserEnv + "=" + probe, proc.UserNamespacesEnv + "=" + userns}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.CombinedOutput()
	t.Logf("as nobody:\n%s", out)
	if err != nil {
		t.Fatalf("TestConfinedAsUser as nobody: %v", err)
	}
}

// copyFile copies src to dst, executable by anyone.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
