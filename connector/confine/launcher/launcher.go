// Package launcher is the launcher step of a confined start (see package
// confine): its init function recognises a program started as the
// launcher, restricts that process (rlimits, no_new_privs, Landlock) and
// executes the server, never returning to the program.
//
// It is a package of its own, importing only the standard library and
// go-landlock, so that it runs early: Go initializes packages in import
// path order once their imports are, so this init runs as soon as
// go-landlock's packages have, before most of the program's other package
// inits (CUE, protobuf descriptors, OpenTelemetry, SQLite), whose work a
// launcher that never returns would only throw away.
package launcher

// Arg is the hidden first argument that makes a program linking this
// package the launcher.
const Arg = "__oa_confined_exec"

// ExitFailed is the exit status of a launcher that could not confine
// itself; it never executes the server then.
const ExitFailed = 126

// NetAny is the Net of a spec that leaves TCP unrestricted.
const NetAny = "any"

// ABIScoped is the Landlock ABI that scopes signals and abstract unix
// sockets to the server's own domain, the least a ruleset is built for.
const ABIScoped = 6

// Spec is what the launcher applies: a connection's profile resolved for
// one start.
type Spec struct {
	// ABI is the Landlock ABI the ruleset is built for.
	ABI int `json:"abi"`
	// Read and Write are absolute paths, files or folders.
	Read  []string `json:"read"`
	Write []string `json:"write"`
	// Net is "" (no TCP), NetAny, or a sorted, comma-separated port list.
	Net         string `json:"net"`
	OpenFiles   int64  `json:"openFiles"`
	MemoryBytes int64  `json:"memoryBytes"`
}
