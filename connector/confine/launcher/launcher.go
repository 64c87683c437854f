// Package launcher is the launcher step of a confined start (see package
// confine): its init function recognises a program started as the
// launcher, restricts that process (rlimits, Landlock, capabilities,
// seccomp) and executes the server, never returning to the program.
//
// It is a package of its own, importing only the standard library,
// golang.org/x/sys, go-landlock and go-seccomp-bpf, so that it runs early:
// Go initializes packages in import path order once their imports are, so
// this init runs as soon as those have, before most of the program's other
// package inits (CUE, protobuf descriptors, OpenTelemetry, SQLite), whose
// work a launcher that never returns would only throw away.
package launcher

import "strings"

// Arg is the hidden first argument that makes a program linking this
// package the launcher.
const Arg = "__oa_confined_exec"

// ProbeArg is the hidden argument that makes a program linking this
// package try, and exit 0 only if it can, what a launcher in namespaces
// of its own does before it restricts itself (mount its /proc, cover a
// folder with a tmpfs): started in a user namespace, it tells whether
// the host lets a non-root operator give servers namespaces.
const ProbeArg = "__oa_namespace_probe"

// ExitFailed is the exit status of a launcher that could not confine
// itself; it never executes the server then.
const ExitFailed = 126

// NetAny is the Net of a spec that leaves TCP unrestricted.
const NetAny = "any"

// The Landlock ABI each layer of the filesystem and network rules needs.
// Below ABITruncate the seccomp filter denies truncate(2) by path, so a
// file the server may only read cannot be truncated either.
const (
	ABIFilesystem = 1
	ABIRefer      = 2
	ABITruncate   = 3
	ABITCP        = 4
	ABIScoped     = 6
)

// MaxABI is the newest Landlock ABI whose rights a ruleset is built with;
// a newer kernel is used at this level.
const MaxABI = 7

// Spec is what the launcher applies: a connection's profile resolved for
// one start.
type Spec struct {
	// ABI is the Landlock ABI the ruleset is built for (at least
	// ABIFilesystem).
	ABI int `json:"abi"`
	// Read and Write are absolute paths, files or folders.
	Read  []string `json:"read"`
	Write []string `json:"write"`
	// Exact are the paths of Read and Write (the profile's grants and the
	// private folders) that are opened without following a symbolic link
	// in any component and must still be the file the start checked: a
	// path swapped since for a link, or for another file, fails the start.
	Exact []Exact `json:"exact,omitempty"`
	// Net is "" (no network), NetAny, or a sorted, comma-separated port list.
	Net         string `json:"net"`
	OpenFiles   int64  `json:"openFiles"`
	MemoryBytes int64  `json:"memoryBytes"`
	// OwnIPC is true when the launcher was started in an IPC namespace of
	// its own; otherwise the seccomp filter denies SysV IPC.
	OwnIPC bool `json:"ownIpc,omitempty"`
	// OwnPID is true when the launcher was started in pid and mount
	// namespaces of its own: it mounts a /proc of its pid namespace
	// before anything reads /proc (the host's would name other processes
	// by the pids it has there, and /proc/self would not be its own).
	OwnPID bool `json:"ownPid,omitempty"`
	// Hide are folders the launcher, in its own mount namespace (OwnPID),
	// covers with an empty read-only folder before it restricts itself:
	// where the host keeps unix sockets (a socket is reached by connect,
	// which Landlock below ABI 9 does not check) and $OA_HOME. What of
	// Read and Write lies inside one is mounted back in place, so the
	// server reaches exactly what it did, and no socket beside it.
	Hide []string `json:"hide,omitempty"`
}

// SocketFolders are the folders a launcher in its own mount namespace
// hides (Spec.Hide) besides $OA_HOME: where the host's programs keep
// their unix sockets (a container engine's, the system bus, a terminal
// multiplexer's, a display's).
var SocketFolders = []string{"/run", "/var/run", "/tmp", "/var/tmp", "/dev/shm"}

// Exact is one path opened exactly, and the file it named when the start
// was checked.
type Exact struct {
	Path string `json:"path"`
	Dev  uint64 `json:"dev"`
	Ino  uint64 `json:"ino"`
}

// Within reports whether path is dir or lies inside it (both absolute
// and clean).
func Within(path, dir string) bool {
	return path == dir || dir == "/" || strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/")
}
