package confine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector/confine/launcher"
)

// DefaultReadPaths are what every confined server may read (and execute)
// besides its own executable and interpreter: the system's programs,
// libraries and configuration, and its own /proc entry. A missing one is
// left out.
var DefaultReadPaths = []string{"/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/etc", "/dev/urandom", "/proc/self"}

// DefaultWritePaths are what every confined server may write besides its
// private folders: /dev/null, which every program may need to open for
// writing and which keeps nothing.
var DefaultWritePaths = []string{"/dev/null"}

// Spec is what the launcher applies: the profile resolved for one start
// (package launcher).
type Spec = launcher.Spec

// ExitLauncherFailed is the exit status of a launcher that could not
// confine itself; it never executes the server then.
const ExitLauncherFailed = launcher.ExitFailed

// Target is the server a Spec is built for.
type Target struct {
	// Executable is the server's program, an absolute path.
	Executable string
	// PATH is the server's PATH, for an interpreter named through env.
	PATH string
	// Home and Tmp are the server's private state and temporary folders.
	Home, Tmp string
	// Exact are the profile's grants and the private folders as opened
	// for this start (ExactPaths): the launcher reaches each by the file
	// it named then.
	Exact []launcher.Exact
	// OwnIPC: the server starts in an IPC namespace of its own; OwnPID in
	// pid and mount namespaces of its own.
	OwnIPC, OwnPID bool
	// HostHome is $OA_HOME, hidden from the server with the host's socket
	// folders where it has a mount namespace of its own ("" for none).
	HostHome string
}

// Build resolves p for one start of target at Landlock ABI abi: the
// defaults, the executable and its interpreter (a "#!" line, and the
// program it names through /usr/bin/env), the private folders, and the
// profile's own paths.
func Build(p *Profile, abi int, target Target) *Spec {
	if p == nil {
		p = &Profile{}
	}
	lim := p.Limits.Effective()
	s := &Spec{ABI: abi, Net: p.Net, OpenFiles: lim.OpenFiles, MemoryBytes: lim.MemoryBytes, Exact: target.Exact, OwnIPC: target.OwnIPC, OwnPID: target.OwnPID}
	if target.OwnPID {
		s.Hide = append(slices.Clone(launcher.SocketFolders), target.HostHome)
		s.Hide = slices.DeleteFunc(s.Hide, func(d string) bool { return d == "" })
	}
	for _, path := range DefaultReadPaths {
		if exists(path) {
			s.Read = append(s.Read, path)
		}
	}
	s.Read = append(s.Read, target.Executable)
	s.Read = append(s.Read, interpreters(target.Executable, target.PATH)...)
	s.Read = append(s.Read, p.Read...)
	s.Write = append(s.Write, DefaultWritePaths...)
	s.Write = append(s.Write, target.Home, target.Tmp)
	s.Write = append(s.Write, p.Write...)
	return s
}

// interpreters returns the interpreter a script's "#!" line names, and,
// when that is env, the program env would run (looked up in path).
func interpreters(exe, path string) []string {
	f, err := os.Open(exe)
	if err != nil {
		return nil
	}
	defer f.Close()
	head := make([]byte, 256)
	n, _ := io.ReadFull(f, head)
	line, _, _ := bytes.Cut(head[:n], []byte("\n"))
	rest, ok := bytes.CutPrefix(line, []byte("#!"))
	if !ok {
		return nil
	}
	words := strings.Fields(string(rest))
	if len(words) == 0 || !filepath.IsAbs(words[0]) {
		return nil
	}
	out := []string{words[0]}
	if filepath.Base(words[0]) != "env" {
		return out
	}
	for _, w := range words[1:] {
		if strings.HasPrefix(w, "-") || strings.Contains(w, "=") {
			continue
		}
		if found := lookIn(w, path); found != "" {
			out = append(out, found)
		}
		break
	}
	return out
}

// lookIn finds an executable named name in the folders of path.
func lookIn(name, path string) string {
	for dir := range strings.SplitSeq(path, string(os.PathListSeparator)) {
		if !filepath.IsAbs(dir) {
			continue
		}
		if found, err := exec.LookPath(filepath.Join(dir, name)); err == nil {
			return found
		}
	}
	return ""
}

// ExactPaths opens each --read and --write path of p, and each private
// folder, without following a symbolic link in any component, and
// returns the file each names now, for the launcher to check again. A
// grant that has become a link (or lies under one) is refused
// (confinement_path_changed), naming its field: the connection was
// given the folder, never where a link in it points. The private folders
// are oa's own and are resolved first (the host's $OA_HOME may lie under
// a link; the server cannot change the folders above its own).
func ExactPaths(p *Profile, private ...string) ([]launcher.Exact, error) {
	var out []launcher.Exact
	add := func(path, field string) error {
		fd, err := launcher.OpenNoSymlinks(path)
		if err != nil {
			return blocking.New(blocking.ConfinementPathChanged, "the %s path passes through a symbolic link, or is gone", field)
		}
		defer syscall.Close(fd)
		var st syscall.Stat_t
		if err := syscall.Fstat(fd, &st); err != nil {
			return blocking.New(blocking.ConfinementPathChanged, "the %s path cannot be read", field)
		}
		out = append(out, launcher.Exact{Path: path, Dev: uint64(st.Dev), Ino: st.Ino})
		return nil
	}
	if p != nil {
		for _, f := range []struct {
			name  string
			paths []string
		}{{"read", p.Read}, {"write", p.Write}} {
			for i, path := range f.paths {
				if err := add(path, fmt.Sprintf("%s[%d]", f.name, i)); err != nil {
					return nil, err
				}
			}
		}
	}
	for _, dir := range private {
		if err := add(dir, "private folder"); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Self is the running program as a path the launcher re-executes: the
// same binary even after the file on disk is replaced.
const Self = "/proc/self/exe"

// ProbeArg is the argument (after Self) that runs the launcher's namespace
// probe (launcher.ProbeArg).
const ProbeArg = launcher.ProbeArg

// LauncherArgs returns the arguments (after Self) that run the server
// executable with argv (argv[0] as the server should see it) under s.
func LauncherArgs(s *Spec, executable string, argv []string) ([]string, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("confine: encoding the spec: %w", err)
	}
	return append([]string{launcher.Arg, string(b), executable}, argv...), nil
}
