package connection

import (
	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/confine"
	"github.com/oa-dev/oa/connector/remote"
)

// The states a connection is in, as View.State and Record.State say them.
const (
	// StateReady: enabled, its current revision verified, its server
	// reached at the last verification.
	StateReady = "ready"
	// StateDisabled: turned off by a person; plans do not use it.
	StateDisabled = "disabled"
	// StateUnverified: its current revision was never verified.
	StateUnverified = "unverified"
	// StateOffline: verified, but the last verification attempt did not
	// reach the server.
	StateOffline = "offline"
	// StateUnverifiable: its record does not verify with the host key (an
	// edited row); nothing of it can be believed.
	StateUnverifiable = "unverifiable"
)

// State is where the connection stands, in the order a person has to act
// on it: disabled before unverified before offline, else ready.
func (r *Record) State() string {
	switch {
	case !r.Enabled:
		return StateDisabled
	case !r.Verified():
		return StateUnverified
	case !r.Online:
		return StateOffline
	default:
		return StateReady
	}
}

// View is what a person is shown of a connection: its configuration
// (names of secrets, never values: the record holds none), its state and
// what its last verification found.
type View struct {
	Name      string `json:"name"`
	Connector string `json:"connector"`
	Revision  int64  `json:"revision"`
	State     string `json:"state"`
	Enabled   bool   `json:"enabled"`
	Online    bool   `json:"online"`
	// LastError is the refusal code of the last failed verification.
	LastError       blocking.Code `json:"lastError,omitempty"`
	Verified        bool          `json:"verified"`
	AuthorityDigest string        `json:"authorityDigest,omitempty"`
	InventoryDigest string        `json:"inventoryDigest,omitempty"`
	Tools           []string      `json:"tools,omitempty"`
	VerifiedBy      string        `json:"verifiedBy,omitempty"`
	// Protocol is the MCP version a remote server agreed to when verified.
	Protocol string `json:"protocol,omitempty"`
	// Transport is how a remote server was reached when verified.
	Transport string           `json:"transport,omitempty"`
	Config    connector.Config `json:"config"`
	// Confinement is the profile in words; Enforced is how the last
	// verification's start was confined.
	Confinement string         `json:"confinement"`
	Enforced    *confine.Level `json:"enforced,omitempty"`
	// Login is the state of an OAuth connection's stored login (never a
	// token), set by whoever shows one connection (StoredLogin).
	Login *remote.LoginState `json:"login,omitempty"`
	// Level is the level the server is held to on this host now, set by
	// whoever shows one connection (LevelNow).
	Level *HostLevel `json:"level,omitempty"`
}

// ViewOf is the view of the connection name whose record is rec; a nil
// rec (the record does not verify, see Listed) is StateUnverifiable and
// shows nothing else.
func ViewOf(name string, rec *Record) View {
	if rec == nil {
		return View{Name: name, State: StateUnverifiable}
	}
	v := View{Name: rec.Name, Connector: rec.Connector, Revision: rec.Revision, State: rec.State(), Enabled: rec.Enabled, Online: rec.Online, LastError: rec.LastError, Verified: rec.Verified(), AuthorityDigest: rec.AuthorityDigest(), Config: rec.Config, Confinement: confine.Describe(rec.Config.Confinement)}
	switch {
	case rec.Config.Kind() == connector.KindSandbox:
		v.Confinement = "in-process: the built-in sandbox runs inside oa"
	case rec.Config.Remote != nil:
		// No process of it runs here: a profile would describe nothing.
		v.Confinement = "none here: a remote server, reached over Streamable HTTP; oa starts no process for it"
	}
	if ver := rec.Verification; ver != nil {
		v.InventoryDigest, v.VerifiedBy, v.Protocol, v.Enforced, v.Transport = ver.Inventory.Digest, ver.VerifiedBy, ver.Protocol, ver.Enforced, ver.Transport
		for _, t := range ver.Inventory.Tools {
			v.Tools = append(v.Tools, t.Name)
		}
	}
	return v
}

// HostLevel is the level a local confined connection's server is held to
// on this host now, as `oa connection show` lists it: the guarantees held
// and not (with why), and what the seccomp filter refuses.
type HostLevel struct {
	// Guarantees are the guarantees held, in confine.Guarantees' order.
	Guarantees []string `json:"guarantees,omitempty"`
	// NotHeld names each guarantee not held and why.
	NotHeld []string `json:"notHeld,omitempty"`
	// Seccomp is the seccomp filter's version, "" where the kernel takes
	// none; SeccompDenies says, one line each, what it refuses.
	Seccomp       string   `json:"seccomp,omitempty"`
	SeccompDenies []string `json:"seccompDenies,omitempty"`
	// Refused is the code of the refusal when this host cannot confine
	// the server at all (confinement_unavailable).
	Refused blocking.Code `json:"refused,omitempty"`
}

// LevelNow is the level rec's server is held to on this host now; nil
// for a connection that starts no confined local program (in-process,
// reached by URL, or unconfined).
func LevelNow(rec *Record) *HostLevel {
	if rec == nil || rec.Config.Kind() == connector.KindSandbox || rec.Config.Command == "" || rec.Config.Confinement.IsUnconfined() {
		return nil
	}
	level, err := connector.Enforcement(rec.Config)
	if err != nil {
		if r := blocking.Refusals(err); len(r) > 0 {
			return &HostLevel{Refused: r[0].Code}
		}
		return &HostLevel{Refused: blocking.ConfinementUnavailable}
	}
	l := &HostLevel{Guarantees: level.Guarantees, NotHeld: level.NotHeld, Seccomp: level.Filter}
	if level.Filter != "" {
		// The namespaces oa makes hold the processes guarantee, and only
		// they: a level holding it is a start with an IPC namespace of
		// its own, where SysV IPC is left to the server.
		p := rec.Config.Confinement
		if p == nil {
			p = &confine.Profile{} // the default profile
		}
		l.SeccompDenies = confine.DeniedCalls(p, confine.Holders{Namespaces: level.Holds(confine.GuaranteeProcesses), Seccomp: true})
	}
	return l
}
