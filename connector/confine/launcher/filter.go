package launcher

// FilterVersion names the seccomp filter below; a change of what it
// denies is a new version, recorded in the level a plan holds.
const FilterVersion = "oa-seccomp-1"

// Denial is one group of system calls the seccomp filter refuses a
// confined server, and why a tool server never needs them.
type Denial struct {
	// Calls are the system calls, as Linux names them.
	Calls []string
	// When says which calls of them are refused; "" is every call.
	When string
	// Why is what the call would give the server.
	Why string
	// Layer is set when the denial is only part of some starts (see
	// Denials).
	Layer string
}

// Layers of the filter that only some starts have.
const (
	LayerNoNet      = "net none"             // the profile allows no network
	LayerNoOwnIPC   = "no own IPC namespace" // the server shares SysV IPC with the host
	LayerNoTruncate = "Landlock below ABI 3" // Landlock cannot refuse truncate
)

// Denials is what the filter refuses, each with EPERM unless said (a
// call refused with ENOSYS makes the C library fall back to an older one
// that the filter can read).
var Denials = []Denial{
	{Calls: []string{"bpf", "perf_event_open", "userfaultfd"}, Why: "kernel programs, performance counters and fault handling: kernel attack surface"},
	{Calls: []string{"keyctl", "add_key", "request_key"}, Why: "the kernel keyrings of the user it runs as"},
	{Calls: []string{"mount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr"}, Why: "changing what the filesystem shows"},
	{Calls: []string{"setns"}, Why: "entering another namespace"},
	{Calls: []string{"unshare", "clone"}, When: "with a new namespace asked for", Why: "namespaces of its own, where it would hold capabilities again"},
	{Calls: []string{"clone3"}, When: "with ENOSYS, so the C library uses clone, whose flags the filter reads", Why: "namespaces of its own"},
	{Calls: []string{"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module"}, Why: "loading kernel code"},
	{Calls: []string{"mknod", "mknodat"}, When: "of a character or block device", Why: "a device node of a disk or of memory"},
	{Calls: []string{"syslog"}, Why: "the kernel log"},
	{Calls: []string{"sched_setscheduler"}, When: "to a real-time or deadline policy", Why: "starving every other process of the host"},
	{Calls: []string{"sched_setattr"}, Why: "scheduling policy (real-time, deadline) of any process"},
	{Calls: []string{"setpriority", "sched_setaffinity", "ioprio_set"}, When: "of a process other than itself", Why: "renicing or re-pinning oa or any process of its user"},
	{Calls: []string{"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd"}, Why: "reading or writing another process's memory or files"},
	{Calls: []string{"iopl", "ioperm"}, Why: "hardware I/O ports"},
	{Calls: []string{"swapon", "swapoff", "reboot", "acct", "quotactl"}, Why: "host administration"},
	{Calls: []string{"socket"}, When: "of any family but unix and netlink", Why: "any network (UDP, raw and packet sockets included)", Layer: LayerNoNet},
	{Calls: []string{"shmget", "msgget", "semget"}, Why: "System V IPC shared with the host's other programs", Layer: LayerNoOwnIPC},
	{Calls: []string{"truncate"}, Why: "truncating a file by name, which Landlock below ABI 3 does not refuse", Layer: LayerNoTruncate},
}

// Layers returns the layers of the filter a start of s has.
func Layers(s *Spec) []string {
	var out []string
	if s.Net == "" {
		out = append(out, LayerNoNet)
	}
	if !s.OwnIPC {
		out = append(out, LayerNoOwnIPC)
	}
	if s.ABI < ABITruncate {
		out = append(out, LayerNoTruncate)
	}
	return out
}
