// Package connection keeps a host's live connections: downstream MCP
// servers (or the built-in sandbox) that perform a connector's tools.
//
// Every change appends a new version of the connection's record to the
// host store, signed with the host key, so an edited row reads as
// unverifiable. A connection's revision goes up whenever its configuration
// or its verified tool inventory changes; enabling or disabling it does not
// change what the server is, so it keeps the revision. Secret values are
// never stored: a configuration names environment variables and a 0600
// secret file, read by the connector when the server starts.
//
// Add scans the command and arguments for secrets (token shapes, and
// secret-looking names given a value) and refuses at the word without echoing
// it; it checks the confinement profile (paths exist, never $OA_HOME, the
// policy's allow_unconfined). Verify probes the server and records its
// inventory, a remote server's protocol version and the confinement level
// enforced. Login and Logout run and remove a connection's OAuth login
// without changing its record; StartOptions gives every start its private
// folder under $OA_HOME/confined/NAME and its token store.
package connection

import (
	"context"
	"crypto/sha256"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/confine"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/internal/canonical"
	"github.com/oa-dev/oa/internal/store"
	"github.com/oa-dev/oa/internal/tokenstore"
	"github.com/oa-dev/oa/ir"
)

// RecordType is the type of a connection record.
const RecordType = "oa.connection/v1"

// Record is one version of a connection.
type Record struct {
	Type string `json:"type"`
	Host string `json:"host"`
	// Name is the connection id, unique on the host.
	Name string `json:"name"`
	// Seq is the store version of this record; every change adds one.
	Seq int64 `json:"seq"`
	// Revision goes up when Config or the verified inventory changes.
	Revision  int64            `json:"revision"`
	Connector string           `json:"connector"`
	Config    connector.Config `json:"config"`
	Enabled   bool             `json:"enabled"`
	// Online is whether the last verification attempt reached the server.
	Online bool `json:"online"`
	// LastError is the refusal code of the last verification attempt that
	// failed ("" once one succeeds): what an operator looks at first. A
	// closed code, never the server's text.
	LastError blocking.Code `json:"lastError,omitempty"`
	// Verification is the last successful verification of this revision,
	// nil until one succeeds.
	Verification *Verification `json:"verification"`
	ChangedBy    string        `json:"changedBy"`
	OSAccount    string        `json:"osAccount"`
	ChangedAt    time.Time     `json:"changedAt"`

	// authority remembers AuthorityDigest for a record as read; write
	// clears it on every record it changes.
	authority string
}

// Verification is what one verification of a revision found.
type Verification struct {
	Revision  int64               `json:"revision"`
	Inventory connector.Inventory `json:"inventory"`
	// Protocol is the MCP protocol version a remote server agreed to ("" for
	// a stdio server, whose version oa chooses); a change raises the
	// revision like a changed inventory.
	Protocol string `json:"protocol,omitempty"`
	// Transport is how a remote server was reached (connector/remote's
	// TransportStreamable, or TransportSSE for a server of the older
	// HTTP+SSE transport); a change raises the revision like the protocol.
	Transport  string    `json:"transport,omitempty"`
	VerifiedBy string    `json:"verifiedBy"`
	VerifiedAt time.Time `json:"verifiedAt"`
	// Enforced is how the server was confined when it was verified (see
	// confine.Level), absent in records made before confinement.
	Enforced *confine.Level `json:"enforced,omitempty"`
}

// Verified reports whether the connection's current revision is verified.
func (r *Record) Verified() bool {
	return r.Verification != nil && r.Verification.Revision == r.Revision
}

// authority is what AuthorityDigest covers.
type authority struct {
	ConnectionID    string           `json:"connectionId"`
	Connector       string           `json:"connector"`
	Revision        int64            `json:"revision"`
	Config          connector.Config `json:"config"`
	InventoryDigest string           `json:"inventoryDigest"`
	Protocol        string           `json:"protocol,omitempty"`
	VerifiedBy      string           `json:"verifiedBy"`
}

// AuthorityDigest is the digest of what vouches for the connection: its
// configuration (names, never secret values), revision, verified
// inventory digest and who verified it. It is "" when the current revision
// is not verified.
func (r *Record) AuthorityDigest() string {
	if r.authority != "" {
		return r.authority
	}
	if !r.Verified() {
		return ""
	}
	b, err := canonical.Marshal(authority{r.Name, r.Connector, r.Revision, r.Config, r.Verification.Inventory.Digest, r.Verification.Protocol, r.Verification.VerifiedBy})
	if err != nil {
		panic("connection: authority is always encodable: " + err.Error())
	}
	return ir.DigestBytes(b)
}

var (
	namePattern      = regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)*$`)
	connectorPattern = regexp.MustCompile(`^[a-z][a-z0-9]*([._-][a-z0-9]+)*$`)
	envNamePattern   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// Change is who makes a change, and when.
type Change struct {
	By  string
	Now time.Time
}

func (c Change) check() error {
	return host.CheckPerson(c.By, "the connection change")
}

// AddOptions are the settings of a new connection.
type AddOptions struct {
	Name      string
	Connector string
	Config    connector.Config
	// Replace gives an existing connection a new configuration.
	Replace bool
	// Preinstall installs an `npx [-y] PACKAGE ARGS…` server's package
	// ahead, with network now, into the connection's private HOME, and
	// records the package's own command there: the confined server then
	// starts with no network.
	Preinstall bool
}

// Add records a new connection (or, with Replace, a new configuration of
// one): enabled, not yet verified. Its arguments are scanned for anything
// that looks like a secret, which belongs in an environment variable or
// the secret file instead.
func Add(ctx context.Context, h *host.Host, opts AddOptions, c Change) (*Record, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if err := checkSettings(&opts); err != nil {
		return nil, err
	}
	profile, err := checkConfinement(h, opts.Config)
	if err != nil {
		return nil, err
	}
	opts.Config.Confinement = profile
	if opts.Preinstall {
		if prev, err := Get(ctx, h, opts.Name); err == nil && prev != nil && !opts.Replace {
			return nil, blocking.New(blocking.ConnectionExists, "connection %s", opts.Name)
		}
		if err := preinstall(ctx, h.Home, opts.Name, &opts.Config); err != nil {
			return nil, err
		}
	}
	if err := checkCommand(opts.Config, profile, PrivateDir(h.Home, opts.Name)); err != nil {
		return nil, err
	}
	rec := &Record{Type: RecordType, Host: h.Policy.Host, Name: opts.Name, Connector: opts.Connector, Config: opts.Config, Enabled: true}
	err = write(ctx, h, opts.Name, c, func(prev *Record) (*Record, error) {
		if prev != nil && !opts.Replace {
			return nil, blocking.New(blocking.ConnectionExists, "connection %s", opts.Name)
		}
		rec.Revision = 1
		if prev != nil {
			rec.Revision = prev.Revision + 1
		}
		return rec, nil
	})
	return rec, err
}

// checkSettings refuses a bad name, connector id or configuration, naming
// the rule and never the value. A remote server's settings are normalized
// in place.
func checkSettings(opts *AddOptions) error {
	var refused blocking.List
	bad := func(path, format string, args ...any) {
		refused = append(refused, blocking.New(blocking.ConnectionInvalid, format, args...).At("", path))
	}
	if !namePattern.MatchString(opts.Name) || len(opts.Name) > 63 {
		bad("name", "a connection name is lower-case letters, digits and single dashes, at most 63 characters")
	}
	if !connectorPattern.MatchString(opts.Connector) || len(opts.Connector) > 64 {
		bad("connector", "a connector id is lower-case letters and digits separated by '.', '_' or '-'")
	}
	if opts.Config.Remote != nil {
		return append(refused, checkRemote(opts)...).Err()
	}
	if opts.Config.Command == "" {
		bad("command", "give the server's command after --")
	}
	words := append([]string{opts.Config.Command}, opts.Config.Args...)
	secrets := map[int]bool{}
	for _, f := range scanCommandLine(words, isPath) {
		secrets[f.index] = true
		bad(wordPath(f.index), "%s is on the command line, which is stored and shown; pass the secret with --env NAME or --secret-file instead", f.rule)
	}
	for i, arg := range opts.Config.Args {
		if secrets[i+1] || isPath(arg) {
			continue // a file that exists is a path, not a secret
		}
		if findings := ir.ScanText(arg, false); len(findings) > 0 {
			bad("args["+strconv.Itoa(i)+"]", "looks like a secret or customer value (%s); pass it with --env NAME or --secret-file", findings[0].Rule)
		}
	}
	for i, name := range opts.Config.Env {
		if !envNamePattern.MatchString(name) {
			bad("env["+strconv.Itoa(i)+"]", "an environment variable name is letters, digits and underscores (give the NAME, never the value)")
		}
	}
	if err := connector.CheckSettings(opts.Config); err != nil {
		refused = append(refused, blocking.Refusals(err)...)
	}
	for _, name := range slices.Sorted(maps.Keys(opts.Config.Settings)) {
		if findings := ir.ScanText(opts.Config.Settings[name], false); len(findings) > 0 {
			refused = append(refused, blocking.New(blocking.ConnectionSettingInvalid, "setting %s looks like a secret or customer value (%s); a setting is recorded and shown: pass a secret with --secret-file", name, findings[0].Rule).At("", "settings."+name))
		}
	}
	return refused.Err()
}

// checkConfinement refuses a profile oa cannot record or the host policy
// forbids, and returns it with its paths made absolute (nil for the
// default profile, so a default connection's configuration reads as it
// did before profiles existed).
func checkConfinement(h *host.Host, cfg connector.Config) (*confine.Profile, error) {
	if cfg.Confinement.IsDefault() {
		return nil, nil
	}
	p := *cfg.Confinement
	p.Read, p.Write = slices.Clone(p.Read), slices.Clone(p.Write)
	if err := p.Normalize(); err != nil {
		return nil, blocking.New(blocking.ConfinementInvalid, "a --read or --write path cannot be made absolute").At("", "confinement")
	}
	if refused := p.Check(confine.CheckOptions{Home: h.Home, NoProcess: cfg.Kind() == connector.KindSandbox || cfg.Command == ""}); refused != nil {
		return nil, refused
	}
	if err := allowedByPolicy(h, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// allowedByPolicy refuses an unconfined profile on a host whose policy
// forbids it.
func allowedByPolicy(h *host.Host, p *confine.Profile) error {
	if p.IsUnconfined() && !h.Policy.AllowsUnconfined() {
		return blocking.New(blocking.ConfinementForbidden, "this host's policy sets confinement.allow_unconfined: false").At("", "confinement.unconfined")
	}
	return nil
}

// PrivateFolder is the folder under $OA_HOME holding each connection's
// private state and temporary folders (PrivateDir).
const PrivateFolder = "confined"

// PrivateDir is connection name's private folder under home: what a
// confined server gets as HOME and TMPDIR (connector.Options.PrivateDir).
func PrivateDir(home, name string) string {
	return filepath.Join(home, PrivateFolder, name)
}

// StartOptions are opts for starting connection name's server on the host
// at home: its name (shown before each line of the server's stderr), its
// private folder and OAuth token store set. A home of "" sets the name
// only (each start then gets temporary private folders).
func StartOptions(home, name string, opts connector.Options) connector.Options {
	opts.Name = name
	if home != "" {
		opts.PrivateDir = PrivateDir(home, name)
		opts.HostHome = home
		opts.Tokens = tokenstore.For(home, name)
	}
	return opts
}

// wordPath names word i of the command line (0 the command) by its field.
func wordPath(i int) string {
	if i == 0 {
		return "command"
	}
	return "args[" + strconv.Itoa(i-1) + "]"
}

func isPath(arg string) bool {
	_, err := os.Stat(arg)
	return err == nil
}

// SetEnabled enables or disables a connection. The revision stays: the
// server is the same, and a disabled connection simply cannot be chosen.
func SetEnabled(ctx context.Context, h *host.Host, name string, enabled bool, c Change) (*Record, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	var rec *Record
	err := write(ctx, h, name, c, func(prev *Record) (*Record, error) {
		if prev == nil {
			return nil, blocking.New(blocking.ConnectionUnknown, "connection %s", name)
		}
		next := *prev
		next.Enabled = enabled
		rec = &next
		return rec, nil
	})
	return rec, err
}

// Verify starts (or, for a remote server, connects to) the connection's
// server, lists its tools and records the inventory, and the protocol
// version a remote server agreed to, as verified by c.By, with the level
// the start was confined to (Verification.Enforced). A changed inventory
// or protocol raises the revision.
// A server that cannot be reached is recorded offline and refused. A
// server this host cannot confine (confinement_unavailable), or not to
// the policy's confinement minimum (confinement_below_minimum), is
// refused before it is started, and nothing is recorded: the connection
// keeps its last verification, and the plan check refuses its
// deployments with the same reason.
func Verify(ctx context.Context, h *host.Host, name string, opts connector.Options, c Change) (*Record, error) {
	rec, _, err := VerifyLevel(ctx, h, name, opts, c)
	return rec, err
}

// VerifyLevel is Verify, also saying how the level enforced changed since
// the previous verification.
func VerifyLevel(ctx context.Context, h *host.Host, name string, opts connector.Options, c Change) (*Record, LevelChange, error) {
	rec, was, err := verify(ctx, h, name, opts, c)
	var change LevelChange
	if rec != nil && rec.Verification != nil && rec.Online {
		change = ChangeOf(was, rec.Verification.Enforced)
	}
	return rec, change, err
}

// verify is Verify, also returning the level the previous verification
// recorded.
func verify(ctx context.Context, h *host.Host, name string, opts connector.Options, c Change) (*Record, *confine.Level, error) {
	if err := c.check(); err != nil {
		return nil, nil, err
	}
	cur, err := Get(ctx, h, name)
	if err != nil {
		return nil, nil, err
	}
	var was *confine.Level
	if v := cur.Verification; v != nil {
		was = v.Enforced
	}
	if err := allowedByPolicy(h, cur.Config.Confinement); err != nil {
		return nil, was, err
	}
	level, err := connector.Enforcement(cur.Config)
	if err == nil {
		err = level.CheckMinimum(h.Policy.ConfinementMinimum())
	}
	if err != nil {
		return nil, was, belowMinimum(cur.Name, was, level, err)
	}
	desc, probeErr := connector.Describe(ctx, cur.Config, StartOptions(h.Home, name, opts))
	var rec *Record
	err = write(ctx, h, name, c, func(prev *Record) (*Record, error) {
		if prev == nil || prev.Revision != cur.Revision || !sameConfig(prev, cur) {
			return nil, blocking.New(blocking.ConnectionRevisionChanged, "connection %s changed while it was being verified", name)
		}
		next := *prev
		next.Online = probeErr == nil
		next.LastError = lastErrorOf(probeErr)
		if probeErr == nil {
			if pv := prev.Verification; pv != nil && (pv.Inventory.Digest != desc.Inventory.Digest || pv.Protocol != desc.Protocol || pv.Transport != desc.Transport) {
				next.Revision++
			}
			next.Verification = &Verification{Revision: next.Revision, Inventory: desc.Inventory, Protocol: desc.Protocol, Transport: desc.Transport, VerifiedBy: c.By, VerifiedAt: c.Now.UTC().Truncate(time.Second), Enforced: &level}
		}
		rec = &next
		return rec, nil
	})
	if err != nil {
		return nil, was, err
	}
	if probeErr != nil {
		code := blocking.ConnectionVerifyFailed
		if cur.Config.Remote != nil {
			code = blocking.RemoteVerifyFailed
		}
		if r := blocking.Refusals(probeErr); r != nil {
			return rec, was, append(blocking.List{blocking.New(code, "connection %s is recorded offline", name)}, r...)
		}
		return rec, was, blocking.New(code, "connection %s is recorded offline", name)
	}
	return rec, was, nil
}

// belowMinimum is Verify's refusal of a start this host cannot confine,
// or not to the policy's minimum (err): nothing is started or recorded,
// so a connection verified before stays as it was, its deployments
// refused by the plan check with this same reason. Beside the reason it
// says what changed since the last verification.
func belowMinimum(name string, was *confine.Level, level confine.Level, err error) error {
	r := blocking.Refusals(err)
	if len(r) == 0 {
		return err
	}
	var is *confine.Level
	if err := r[0]; err.Code == blocking.ConfinementBelowMinimum {
		is = &level
	}
	detail := fmt.Sprintf("connection %s: %s; nothing was started or recorded", name, r[0].Detail)
	if ch := ChangeOf(was, is); ch.Changed() {
		detail += "; since the last verification: " + ch.String()
	}
	out := blocking.New(r[0].Code, "%s", detail).At("", "confinement")
	out.Cause = r[0]
	return out
}

// LevelChange is how the level a connection's server is held to changed
// between two verifications (or a verification and now).
type LevelChange struct {
	// Was is the level at the last verification; nil when none recorded
	// one. Is is the level now; nil when this host cannot confine the
	// server at all.
	Was *confine.Level `json:"was,omitempty"`
	Is  *confine.Level `json:"is,omitempty"`
	// NoLongerHeld and NewlyHeld name the guarantees lost and gained, in
	// confine.Guarantees' order.
	NoLongerHeld []string `json:"noLongerHeld,omitempty"`
	NewlyHeld    []string `json:"newlyHeld,omitempty"`
}

// ChangeOf compares the level was (at the last verification) with is.
func ChangeOf(was, is *confine.Level) LevelChange {
	c := LevelChange{Was: was, Is: is}
	var w, i confine.Level
	if was != nil {
		w = *was
	}
	if is != nil {
		i = *is
	}
	for _, g := range confine.Guarantees {
		switch held, holds := w.Holds(g), i.Holds(g); {
		case held && !holds:
			c.NoLongerHeld = append(c.NoLongerHeld, g)
		case holds && !held:
			c.NewlyHeld = append(c.NewlyHeld, g)
		}
	}
	return c
}

// Changed reports whether the level changed in what it holds, its mode,
// its Landlock ABI or its seccomp filter. Nothing to compare with (no
// level recorded before) is no change.
func (c LevelChange) Changed() bool {
	if c.Was == nil {
		return false
	}
	if c.Is == nil {
		return true
	}
	return len(c.NoLongerHeld)+len(c.NewlyHeld) > 0 || c.Was.Mode != c.Is.Mode || c.Was.ABI != c.Is.ABI || c.Was.Filter != c.Is.Filter
}

// String says the change in words: the Landlock ABI before and after,
// the guarantees no longer and newly held, the seccomp filter.
func (c LevelChange) String() string {
	if !c.Changed() {
		return "unchanged"
	}
	abi := func(l *confine.Level) string {
		if l == nil {
			return "no Landlock"
		}
		if l.Mode != confine.ModeConfined {
			return l.Mode
		}
		return fmt.Sprintf("Landlock ABI %d", l.ABI)
	}
	parts := []string{abi(c.Was) + " then, " + abi(c.Is) + " now"}
	if len(c.NoLongerHeld) > 0 {
		parts = append(parts, "no longer holds "+strings.Join(c.NoLongerHeld, ", "))
	}
	if len(c.NewlyHeld) > 0 {
		parts = append(parts, "newly holds "+strings.Join(c.NewlyHeld, ", "))
	}
	if c.Is != nil && c.Was.Filter != c.Is.Filter {
		parts = append(parts, fmt.Sprintf("seccomp filter %q then, %q now", c.Was.Filter, c.Is.Filter))
	}
	return strings.Join(parts, "; ")
}

// lastErrorOf is a failed verification's first refusal code
// (connection_verify_failed for a fault with none), "" for none.
func lastErrorOf(err error) blocking.Code {
	if err == nil {
		return ""
	}
	if r := blocking.Refusals(err); len(r) > 0 {
		return r[0].Code
	}
	return blocking.ConnectionVerifyFailed
}

func sameConfig(a, b *Record) bool {
	x, err1 := canonical.Marshal(a.Config)
	y, err2 := canonical.Marshal(b.Config)
	return err1 == nil && err2 == nil && string(x) == string(y) && a.Connector == b.Connector
}

// write appends the version next computes from the current one, signed.
func write(ctx context.Context, h *host.Host, name string, c Change, next func(prev *Record) (*Record, error)) error {
	if err := h.PrepareSigner(); err != nil {
		return err
	}
	_, err := h.Versions().Insert(ctx, store.KindConnection, name, func(seq int64, v *store.Version) ([]byte, []byte, error) {
		var prev *Record
		if v != nil {
			p, err := read(h, v)
			if err != nil {
				return nil, nil, err
			}
			prev = p
		}
		rec, err := next(prev)
		if err != nil {
			return nil, nil, err
		}
		rec.authority = "" // what it covers may have changed
		rec.Seq, rec.ChangedBy, rec.OSAccount, rec.ChangedAt = seq, c.By, host.OSAccount(), c.Now.UTC().Truncate(time.Second)
		return h.SignRecord(rec)
	})
	return err
}

// decoded remembers records already verified and decoded, by the host key
// and the digest of their exact bytes, so that recomputing a plan before
// every effect does not decode every connection again. Records read are
// shared: callers never modify one (write copies before it changes one).
var decoded struct {
	sync.Mutex
	byKey map[string]*Record
}

// maxDecoded bounds the memo; past it, it starts again empty.
const maxDecoded = 16384

func read(h *host.Host, v *store.Version) (*Record, error) {
	sum := sha256.New()
	fmt.Fprintf(sum, "%s\n%s\n%d\n%d\n", h.KeyID(), v.Key, v.Seq, len(v.Signature))
	sum.Write(v.Signature)
	sum.Write(v.Record)
	key := string(sum.Sum(nil))
	decoded.Lock()
	rec, ok := decoded.byKey[key]
	decoded.Unlock()
	if ok {
		return rec, nil
	}
	rec = &Record{}
	if err := h.ReadVersion(v, RecordType, rec); err != nil || rec.Name != v.Key {
		return nil, blocking.New(blocking.ConnectionUnverifiable, "connection %s version %d", v.Key, v.Seq)
	}
	rec.authority = rec.AuthorityDigest()
	decoded.Lock()
	if decoded.byKey == nil || len(decoded.byKey) >= maxDecoded {
		decoded.byKey = map[string]*Record{}
	}
	decoded.byKey[key] = rec
	decoded.Unlock()
	return rec, nil
}

// Get returns the current version of connection name, verified.
func Get(ctx context.Context, h *host.Host, name string) (*Record, error) {
	v, err := h.Versions().Latest(ctx, store.KindConnection, name)
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, blocking.New(blocking.ConnectionUnknown, "connection %s", name)
	}
	return read(h, v)
}

// Listed is one connection's current version as read: Record is nil when
// the stored row does not verify.
type Listed struct {
	Name   string  `json:"name"`
	Seq    int64   `json:"seq"`
	Record *Record `json:"record,omitempty"`
}

// List returns the current version of every connection, by name. A row
// that does not verify is listed with a nil Record.
func List(ctx context.Context, h *host.Host) ([]Listed, error) {
	vs, err := h.Versions().LatestOfKind(ctx, store.KindConnection)
	if err != nil {
		return nil, err
	}
	out := make([]Listed, len(vs))
	for i := range vs {
		out[i] = Listed{Name: vs[i].Key, Seq: vs[i].Seq}
		rec, err := read(h, &vs[i])
		switch {
		case err == nil:
			out[i].Record = rec
		case blocking.Refusals(err) == nil:
			return nil, err
		}
	}
	return out, nil
}
