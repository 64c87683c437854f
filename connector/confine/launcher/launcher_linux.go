package launcher

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	"golang.org/x/sys/unix"
)

// init makes this program the launcher when it was started as one (see
// the package comment). It runs before main (and before a test binary's
// flags are read) and does not return.
func init() {
	if len(os.Args) == 2 && os.Args[1] == ProbeArg {
		if err := probeNamespaces(); err != nil {
			os.Exit(ExitFailed)
		}
		os.Exit(0)
	}
	if len(os.Args) < 5 || os.Args[1] != Arg {
		return
	}
	err := launch(os.Args[2], os.Args[3], os.Args[4:])
	// Only the operator's stderr sees this; the server never started.
	fmt.Fprintf(os.Stderr, "oa: confined start failed: %v\n", err)
	os.Exit(ExitFailed)
}

// launch applies the spec to this process and executes the server; it
// returns only on failure. Capabilities are held per thread and exec
// keeps the calling thread's, so the work is done on one locked thread;
// Landlock and seccomp are applied to every thread.
func launch(specJSON, executable string, argv []string) error {
	runtime.LockOSThread()
	dec := json.NewDecoder(bytes.NewReader([]byte(specJSON)))
	dec.DisallowUnknownFields()
	var s Spec
	if err := dec.Decode(&s); err != nil {
		return fmt.Errorf("reading the spec: %w", err)
	}
	if s.OwnPID {
		if err := mountProc(); err != nil {
			return fmt.Errorf("the /proc of the server's pid namespace: %w", err)
		}
	}
	exact, err := openExact(s.Exact)
	if err != nil {
		return err
	}
	if s.OwnPID {
		if err := hideFolders(&s, exact); err != nil {
			return err
		}
	}
	// Read before Landlock, which keeps /proc/sys from the server.
	last := lastCapability()
	if err := restrict(&s, exact); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	if err := dropCapabilities(last); err != nil {
		return fmt.Errorf("capabilities: %w", err)
	}
	if err := loadFilter(&s); err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	// The limits last: the launcher is a large Go program, and under a
	// small address-space bound its own work (the seccomp filter's
	// assembly) could run out of it before the server starts.
	if err := setLimit(syscall.RLIMIT_NOFILE, s.OpenFiles); err != nil {
		return fmt.Errorf("open files limit: %w", err)
	}
	if err := setLimit(syscall.RLIMIT_AS, s.MemoryBytes); err != nil {
		return fmt.Errorf("memory limit: %w", err)
	}
	return syscall.Exec(executable, argv, os.Environ())
}

// probeNamespaces does what a launcher in namespaces of its own does
// before it restricts itself: its own /proc, and a folder covered.
func probeNamespaces() error {
	if err := mountProc(); err != nil {
		return err
	}
	return unix.Mount("tmpfs", "/tmp", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=64k,mode=755")
}

// mountProc makes this mount namespace's mounts private (nothing done here
// reaches the host's) and mounts a /proc of this pid namespace over the
// host's.
func mountProc() error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return err
	}
	return unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
}

// setLimit lowers both the soft and the hard limit of resource to n (or
// to the hard limit already in place, if that is lower), so the server
// cannot raise it again.
func setLimit(resource int, n int64) error {
	if n <= 0 {
		return errors.New("no limit given")
	}
	var cur syscall.Rlimit
	if err := syscall.Getrlimit(resource, &cur); err != nil {
		return err
	}
	v := min(uint64(n), cur.Max)
	return syscall.Setrlimit(resource, &syscall.Rlimit{Cur: v, Max: v})
}

// openExact opens each exact path without following a symbolic link in
// any component (openat2 RESOLVE_NO_SYMLINKS) and checks that it is still
// the file the start checked. It returns, for each path, the name of its
// open descriptor (/proc/self/fd/N): Landlock, given that name, opens the
// very file checked, whatever the path has become since. The descriptors
// are closed by the exec.
func openExact(paths []Exact) (map[string]string, error) {
	out := map[string]string{}
	for _, e := range paths {
		fd, err := OpenNoSymlinks(e.Path)
		if err != nil {
			return nil, fmt.Errorf("a granted path is not what it was: %w", err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || st.Dev != e.Dev || st.Ino != e.Ino {
			return nil, errors.New("a granted path names another file than the start checked")
		}
		out[e.Path] = "/proc/self/fd/" + strconv.Itoa(fd)
	}
	return out, nil
}

// OpenNoSymlinks opens path (O_PATH, close-on-exec) without following a
// symbolic link in any of its components.
func OpenNoSymlinks(path string) (int, error) {
	for {
		fd, err := unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		})
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		if err == unix.ENOSYS {
			return openNoSymlinksByComponent(path)
		}
		return fd, err
	}
}

// openNoSymlinksByComponent is OpenNoSymlinks on a kernel without openat2
// (before Linux 5.6): each component opened O_NOFOLLOW from the one
// before.
func openNoSymlinksByComponent(path string) (int, error) {
	fd, err := unix.Open("/", unix.O_PATH|unix.O_CLOEXEC|unix.O_DIRECTORY, 0)
	if err != nil {
		return -1, err
	}
	for part := range strings.SplitSeq(strings.Trim(path, "/"), "/") {
		if part == "" || part == "." || part == ".." {
			unix.Close(fd)
			return -1, unix.EINVAL
		}
		next, err := unix.Openat(fd, part, unix.O_PATH|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		var st unix.Stat_t
		if err := unix.Fstat(next, &st); err != nil || st.Mode&unix.S_IFMT == unix.S_IFLNK {
			unix.Close(next)
			return -1, unix.ELOOP
		}
		fd = next
	}
	return fd, nil
}

// dropCapabilities empties every capability set (last is the highest
// capability number) of this thread (which
// exec keeps): the bounding set (so exec as root gives nothing back), the
// ambient, inheritable, permitted and effective sets. A process without
// CAP_SETPCAP cannot drop its bounding set and has nothing in it to use:
// no_new_privs keeps exec from granting any.
func dropCapabilities(last int) error {
	for c := 0; c <= last; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && err != unix.EINVAL {
			if err == unix.EPERM && !hasCapability(unix.CAP_SETPCAP) {
				break
			}
			return fmt.Errorf("bounding set: %w", err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && err != unix.EINVAL {
		return fmt.Errorf("ambient set: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var none [2]unix.CapUserData
	return unix.Capset(&hdr, &none[0])
}

// lastCapability is the kernel's highest capability number.
func lastCapability() int {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return 63
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 63
	}
	return n
}

// hasCapability reports whether this thread's effective set holds c.
func hasCapability(c int) bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	return data[c/32].Effective&(1<<(uint(c)%32)) != 0
}

// configs are go-landlock's configurations by ABI.
var configs = map[int]landlock.Config{1: landlock.V1, 2: landlock.V2, 3: landlock.V3, 4: landlock.V4, 5: landlock.V5, 6: landlock.V6, 7: landlock.V7}

// restrict builds the ruleset of s and restricts this process (all its
// threads, with no_new_privs) to it: every filesystem right the ABI
// knows is handled, TCP connect and bind from ABITCP unless the profile
// allows any, and signals and abstract unix sockets scoped from
// ABIScoped. exact maps each exact path to the descriptor name it is
// reached by.
func restrict(s *Spec, exact map[string]string) error {
	base, ok := configs[s.ABI]
	if !ok {
		return fmt.Errorf("no ruleset for ABI %d", s.ABI)
	}
	cfg := landlock.Config{HandledAccessFS: base.HandledAccessFS, Scoped: base.Scoped}
	if s.Net != NetAny {
		cfg.HandledAccessNet = base.HandledAccessNet
	}
	at := func(p string) string {
		if name, ok := exact[p]; ok {
			return name
		}
		return p
	}
	var rules []landlock.Rule
	for _, p := range s.Read {
		if isDir(at(p)) {
			rules = append(rules, landlock.RODirs(at(p)))
		} else {
			rules = append(rules, landlock.ROFiles(at(p)))
		}
	}
	for _, p := range s.Write {
		switch {
		case !isDir(at(p)):
			rules = append(rules, landlock.RWFiles(at(p)))
		case s.ABI >= ABIRefer:
			rules = append(rules, landlock.RWDirs(at(p)).WithRefer())
		default:
			rules = append(rules, landlock.RWDirs(at(p)))
		}
	}
	if s.Net != NetAny && s.Net != "" && s.ABI >= ABITCP {
		ports, err := parsePorts(s.Net)
		if err != nil {
			return err
		}
		for _, port := range ports {
			rules = append(rules, landlock.ConnectTCP(port))
		}
	}
	return cfg.Restrict(rules...)
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// parsePorts reads the spec's port list (canonical: confine wrote it).
func parsePorts(net string) ([]uint16, error) {
	var ports []uint16
	for part := range strings.SplitSeq(net, ",") {
		n, err := strconv.ParseUint(part, 10, 16)
		if err != nil || n == 0 {
			return nil, fmt.Errorf("the spec's port list %q is not canonical", net)
		}
		ports = append(ports, uint16(n))
	}
	return ports, nil
}
