package hostcmd

import (
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/cmd/oa/internal/cli"
	"github.com/oa-dev/oa/connection"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/confine"
	"github.com/oa-dev/oa/connector/remote"
	"github.com/oa-dev/oa/host"
)

func newConnectionCmd() *cobra.Command {
	conn := &cobra.Command{Use: "connection", Short: "Add, verify, enable, disable and list this host's connections"}
	conn.AddCommand(newConnectionAddStdioCmd(), newConnectionAddRemoteCmd(), newConnectionAddCmd(), newConnectionVerifyCmd(), newConnectionEnableCmd(true), newConnectionEnableCmd(false), newConnectionListCmd(), newConnectionShowCmd(), newConnectionLoginCmd(), newConnectionLogoutCmd(), newConnectionImportCmd())
	return conn
}

// connectionAddDeprecated tells a script using oa connection add the two
// commands that replace it (cobra prints it on every use).
const connectionAddDeprecated = "use oa connection add-stdio NAME -- COMMAND ARGS… for a server run over stdio, or oa connection add-remote NAME URL for a remote one"

// newConnectionAddCmd is oa connection add, the one command for both
// kinds of server before add-stdio and add-remote: kept, hidden and
// deprecated, with every flag of both, so scripts keep running.
func newConnectionAddCmd() *cobra.Command {
	var a connectionAdd
	var remote remoteFlags
	var cf confinementFlags
	cmd := &cobra.Command{
		Use:        "add NAME --connector C --as NAME [--url URL] -- COMMAND ARGS…",
		Short:      "Add a connection (deprecated: use add-stdio or add-remote)",
		Deprecated: connectionAddDeprecated,
		Args:       cli.WantArgs(1, -1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a.opts.Name = args[0]
			if err := splitSettings(&a.opts.Config); err != nil {
				return err
			}
			stdio, err := applyServerJSON(cmd, a.fromServerJSON, &a.opts, &remote, args, a.secretFiles)
			if err != nil {
				return err
			}
			if !stdio {
				if err := remote.apply(cmd, &a.opts, args, a.secretFiles); err != nil {
					return err
				}
			}
			return a.add(cmd, &cf)
		},
	}
	a.register(cmd, "an MCP registry server.json: its npm (npx) or pypi (uvx) stdio package with its arguments and environment variable NAMES, or its streamable-http remote's URL (each required header still needs --header NAME --secret-file F); no -- COMMAND")
	cmd.Flags().StringArrayVar(&a.opts.Config.Env, "env", nil, "NAME: pass oa's environment variable NAME to a stdio server; NAME=VALUE: a plain (non-secret) setting, recorded and shown (repeatable)")
	cmd.Flags().StringArrayVar(&a.secretFiles, "secret-file", nil, "a 0600 file: of NAME=VALUE lines for a stdio server, or the value of the --header before it for a remote one")
	cmd.Flags().StringVar(&remote.url, "url", "", "the MCP endpoint of a remote server (Streamable HTTP)")
	remote.register(cmd)
	cmd.Flags().BoolVar(&a.opts.Preinstall, "preinstall", false, preinstallUsage)
	cf.register(cmd)
	return cmd
}

func newConnectionAddStdioCmd() *cobra.Command {
	var a connectionAdd
	var cf confinementFlags
	cmd := &cobra.Command{
		Use:   "add-stdio NAME --connector C --as NAME -- COMMAND ARGS…",
		Short: "Add a connection to an MCP server run here over stdio, confined (or builtin:sandbox-records)",
		Long: `Add-stdio records a connection named NAME to the canonical connector C,
served by COMMAND ARGS… over stdio (or by the server a --from-server-json
names). For a remote server use oa connection add-remote.

` + stdioHelp + `

A new connection is enabled but unverified: run oa connection verify NAME.`,
		Args: cli.WantArgs(1, -1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a.opts.Name = args[0]
			if err := splitSettings(&a.opts.Config); err != nil {
				return err
			}
			stdio, err := applyServerJSON(cmd, a.fromServerJSON, &a.opts, &remoteFlags{}, args, a.secretFiles)
			if err != nil {
				return err
			}
			if a.fromServerJSON != "" && !stdio {
				return cli.Usage(fmt.Errorf("the server.json describes a remote server: use oa connection add-remote NAME --from-server-json F"))
			}
			if !stdio {
				if err := applyStdio(cmd, &a.opts, args, a.secretFiles); err != nil {
					return err
				}
			}
			return a.add(cmd, &cf)
		},
	}
	a.register(cmd, "an MCP registry server.json: its npm (npx) or pypi (uvx) stdio package, with its arguments and environment variable NAMES; no -- COMMAND")
	cmd.Flags().StringArrayVar(&a.opts.Config.Env, "env", nil, "NAME: pass oa's environment variable NAME to the server; NAME=VALUE: a plain (non-secret) setting, recorded and shown (repeatable)")
	cmd.Flags().StringArrayVar(&a.secretFiles, "secret-file", nil, "a 0600 file of NAME=VALUE lines, passed to the server as its environment")
	cmd.Flags().BoolVar(&a.opts.Preinstall, "preinstall", false, preinstallUsage)
	cf.register(cmd)
	return cmd
}

func newConnectionAddRemoteCmd() *cobra.Command {
	var a connectionAdd
	var remote remoteFlags
	cmd := &cobra.Command{
		Use:   "add-remote NAME URL --connector C --as NAME",
		Short: "Add a connection to a remote MCP server (Streamable HTTP), with its credentials or OAuth",
		Long: `Add-remote records a connection named NAME to the canonical connector C,
served by the remote MCP server at URL (or the one a --from-server-json
names). For a server run here over stdio use oa connection add-stdio.

` + remoteHelp + `

A new connection is enabled but unverified: run oa connection verify NAME.`,
		Args: cli.WantArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			a.opts.Name = args[0]
			if len(args) == 2 {
				remote.url = args[1]
			}
			stdio, err := applyServerJSON(cmd, a.fromServerJSON, &a.opts, &remote, args[:1], a.secretFiles)
			if err != nil {
				return err
			}
			if stdio {
				return cli.Usage(fmt.Errorf("the server.json describes a stdio package: use oa connection add-stdio NAME --from-server-json F"))
			}
			if remote.url == "" {
				return cli.Usage(fmt.Errorf("give NAME and the server's URL (or --from-server-json F)"))
			}
			if err := remote.applyRemote(&a.opts, a.secretFiles); err != nil {
				return err
			}
			return a.add(cmd, &confinementFlags{net: "none"})
		},
	}
	a.register(cmd, "an MCP registry server.json: its streamable-http remote's URL (each header it requires still needs --header NAME --secret-file F); no URL")
	cmd.Flags().StringArrayVar(&a.secretFiles, "secret-file", nil, "a 0600 file holding the value of the --header before it")
	remote.register(cmd)
	return cmd
}

// stdioHelp is the help of a server run over stdio, its secrets and its
// confinement.
const stdioHelp = `A stdio server is COMMAND ARGS… after --. Secret values never go on the
command line: --env NAME passes the variable NAME from oa's environment,
--secret-file names a 0600 file of NAME=VALUE lines; both are read when the
server starts and are never stored, planned or printed. COMMAND
builtin:sandbox-records is the built-in sandbox records connector.

A stdio server runs confined by the kernel (Linux Landlock; see
docs/confinement.md): by default it reads only the system folders (/usr, /lib*,
/bin, /etc), its program and interpreter, /dev/null, /dev/urandom and its
own /proc entry, writes only a private state folder and a private temporary
folder under $OA_HOME (its HOME and TMPDIR), and opens no TCP connection.
--read and --write add exactly the paths they name (missing paths are
refused), --net allows TCP connections to the ports listed (or any), and
--max-open-files, --max-processes and --max-memory change its limits.
--unconfined runs it with oa's full rights; it is recorded, shown in the
plan, and refused where the host policy forbids it. The profile is part of
the plan: loosening it needs a person's approval again. A remote server runs
no process here and takes no confinement flags.

A confined command that needs a folder the profile does not read (npx from
nvm, a pyenv shim, a script under ~/.local/bin) is refused
connection_command_unreadable with the exact --read that grants it; npx
with no network is refused unless --preinstall installs its package ahead.`

// remoteHelp is the help of a remote server, its credentials and OAuth.
const remoteHelp = `A remote server is reached over MCP Streamable HTTP at URL: https:// by
default; http:// only to a loopback address, or with --plain-http (shown by
oa connection show and in the plan). Credentials are never on the command
line: each --header NAME takes its value from the --secret-file F that
follows it, --bearer-secret-file F sends the token in F as
Authorization: Bearer; each file is mode 0600 and read when a request is
made. --ca-file F adds the PEM authorities in F to those trusted for the
server.

--oauth authorizes with OAuth 2.1 instead: oa discovers the server's
authorization server from its metadata. Without a client secret a person
logs in once with oa connection login NAME --as NAME (authorization code
with PKCE, for the client --oauth-client-id ID, a Client ID Metadata
Document URL, or a client registered dynamically when no id is given); the
tokens are kept encrypted under $OA_HOME/oauth and refreshed when they
expire. With --oauth-client-id ID --oauth-client-secret-file F (a 0600
file) the host uses the client-credentials grant and needs no login.
--oauth-scopes asks for those scopes instead of the ones the server lists.
The method is recorded (and shown, and planned); a token never is.`

// preinstallUsage is the usage of --preinstall.
const preinstallUsage = "for -- npx [-y] PACKAGE ARGS…: install the package now (network, with this machine's npm, install scripts not run) into the connection's own folder and record its own command, so the confined server starts with no network"

// connectionAdd is what every way of adding a connection takes: the
// connection, the person adding it, its secret files and a server.json.
type connectionAdd struct {
	opts           connection.AddOptions
	as             string
	secretFiles    []string
	fromServerJSON string
}

// register adds the flags every way of adding a connection takes;
// serverJSONUsage says what --from-server-json gives this command.
func (a *connectionAdd) register(cmd *cobra.Command, serverJSONUsage string) {
	cmd.Flags().StringVar(&a.opts.Connector, "connector", "", "the canonical connector id")
	cmd.Flags().BoolVar(&a.opts.Replace, "replace", false, "give an existing connection this configuration (its revision goes up)")
	cmd.Flags().StringVar(&a.fromServerJSON, "from-server-json", "", serverJSONUsage)
	cmd.Flags().StringVar(&a.as, "as", "", "the person making the change (recorded)")
	_ = cmd.MarkFlagRequired("connector")
}

// add records the connection, confined as cf says, and prints it.
func (a *connectionAdd) add(cmd *cobra.Command, cf *confinementFlags) error {
	profile, err := cf.profile()
	if err != nil {
		return err
	}
	a.opts.Config.Confinement = profile
	return cli.WithHost(cmd, func(h *host.Host) error {
		rec, err := connection.Add(cmd.Context(), h, a.opts, connection.Change{By: a.as, Now: time.Now()})
		if err != nil {
			return err
		}
		return printConnection(cmd, rec, "added")
	})
}

// splitSettings moves each --env NAME=VALUE out of cfg.Env into
// cfg.Settings: a plain setting recorded with its value. A NAME given
// twice is refused (connection_setting_invalid).
func splitSettings(cfg *connector.Config) error {
	var names []string
	for _, e := range cfg.Env {
		name, value, isSetting := strings.Cut(e, "=")
		if !isSetting {
			names = append(names, e)
			continue
		}
		if _, dup := cfg.Settings[name]; dup {
			return blocking.New(blocking.ConnectionSettingInvalid, "setting %s is given twice", name).At("", "settings."+name)
		}
		if cfg.Settings == nil {
			cfg.Settings = map[string]string{}
		}
		cfg.Settings[name] = value
	}
	cfg.Env = names
	return nil
}

// remoteFlags are the flags of a remote connection.
type remoteFlags struct {
	url, bearer, caFile        string
	headers                    []string
	plainHTTP                  bool
	oauth                      bool
	oauthClientID, oauthSecret string
	oauthScopes                []string
	oauthPort                  int
}

// oauthFlagsGiven reports whether any --oauth-… flag is set.
func (f remoteFlags) oauthFlagsGiven() bool {
	return f.oauthClientID != "" || f.oauthSecret != "" || len(f.oauthScopes) > 0 || f.oauthPort != 0
}

// register adds the flags of a remote server but its URL.
func (f *remoteFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&f.headers, "header", nil, "a request header NAME whose value is in the --secret-file that follows (repeatable)")
	cmd.Flags().StringVar(&f.bearer, "bearer-secret-file", "", "a 0600 file holding a bearer token for the remote server")
	cmd.Flags().StringVar(&f.caFile, "ca-file", "", "a PEM file of authorities trusted for the remote server")
	cmd.Flags().BoolVar(&f.plainHTTP, "plain-http", false, "allow unencrypted http:// to a remote server that is not on loopback")
	cmd.Flags().BoolVar(&f.oauth, "oauth", false, "authorize with OAuth 2.1 (a person's login, or client credentials with --oauth-client-secret-file)")
	cmd.Flags().StringVar(&f.oauthClientID, "oauth-client-id", "", "the OAuth client id registered for oa, or the https URL of its Client ID Metadata Document")
	cmd.Flags().StringVar(&f.oauthSecret, "oauth-client-secret-file", "", "a 0600 file holding the client secret: the client-credentials grant, for a machine host")
	cmd.Flags().StringSliceVar(&f.oauthScopes, "oauth-scopes", nil, "scopes to request, comma-separated (default: those the server's metadata lists)")
	cmd.Flags().IntVar(&f.oauthPort, "oauth-redirect-port", 0, "the loopback port of the login redirect http://127.0.0.1:PORT/callback (default: any free port)")
}

// apply fills opts from the command line of the deprecated oa connection
// add: a remote server when --url is given (NAME only, no command after
// --), else a stdio server's command after --.
func (f remoteFlags) apply(cmd *cobra.Command, opts *connection.AddOptions, args, secretFiles []string) error {
	if f.url == "" {
		if f.bearer != "" || f.caFile != "" || f.plainHTTP || len(f.headers) > 0 || f.oauth || f.oauthFlagsGiven() {
			return cli.Usage(fmt.Errorf("--header, --bearer-secret-file, --oauth…, --ca-file and --plain-http are for a remote server: give --url"))
		}
		return applyStdio(cmd, opts, args, secretFiles)
	}
	if len(args) != 1 {
		return cli.Usage(fmt.Errorf("a remote server (--url) takes NAME only, no command"))
	}
	return f.applyRemote(opts, secretFiles)
}

// applyStdio fills opts with a stdio server's command, after -- in args
// (at most one --secret-file).
func applyStdio(cmd *cobra.Command, opts *connection.AddOptions, args, secretFiles []string) error {
	if cmd.ArgsLenAtDash() != 1 || len(args) < 2 {
		return cli.Usage(fmt.Errorf("give NAME, then -- and the server's command (or oa connection add-remote NAME URL for a remote server)"))
	}
	if len(secretFiles) > 1 {
		return cli.Usage(fmt.Errorf("a stdio server takes one --secret-file of NAME=VALUE lines"))
	}
	opts.Config.Command, opts.Config.Args = args[1], args[2:]
	if len(secretFiles) == 1 {
		opts.Config.SecretFile = secretFiles[0]
	}
	return nil
}

// applyRemote fills opts with the remote server at f.url: --header and
// --secret-file paired in order, the bearer token, authorities and OAuth.
func (f remoteFlags) applyRemote(opts *connection.AddOptions, secretFiles []string) error {
	if len(secretFiles) != len(f.headers) {
		return cli.Usage(fmt.Errorf("give each --header NAME its own --secret-file F (%d headers, %d files)", len(f.headers), len(secretFiles)))
	}
	r := &remote.Config{URL: f.url, PlainHTTP: f.plainHTTP, BearerSecretFile: f.bearer, CAFile: f.caFile}
	for i, name := range f.headers {
		r.Headers = append(r.Headers, remote.Header{Name: name, SecretFile: absPath(secretFiles[i])})
	}
	r.BearerSecretFile, r.CAFile = absPath(r.BearerSecretFile), absPath(r.CAFile)
	switch {
	case f.oauth:
		r.OAuth = &remote.OAuth{ClientID: f.oauthClientID, ClientSecretFile: absPath(f.oauthSecret), Scopes: f.oauthScopes, RedirectPort: f.oauthPort}
	case f.oauthFlagsGiven():
		return cli.Usage(fmt.Errorf("--oauth-client-id, --oauth-client-secret-file, --oauth-scopes and --oauth-redirect-port go with --oauth"))
	}
	opts.Config.Remote = r
	return nil
}

// absPath makes a file named on the command line absolute, so the
// coordinator finds it whatever folder it is started in.
func absPath(p string) string {
	if p == "" {
		return ""
	}
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

func newConnectionVerifyCmd() *cobra.Command {
	var as string
	cmd := &cobra.Command{
		Use:   "verify NAME --as NAME",
		Short: "Start the connection's server, list its tools and record the inventory digest",
		Args:  cli.WantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return cli.WithHost(cmd, func(h *host.Host) error {
				rec, change, err := connection.VerifyLevel(cmd.Context(), h, args[0], cli.ConnectorOptions(cmd), connection.Change{By: as, Now: time.Now()})
				if err != nil {
					return err
				}
				if cli.WantJSON(cmd) {
					out := struct {
						connection.View
						LevelChange *connection.LevelChange `json:"levelChange,omitempty"`
					}{View: connection.ViewOf(rec.Name, rec)}
					if change.Changed() {
						out.LevelChange = &change
					}
					return cli.PrintJSON(cmd.OutOrStdout(), out)
				}
				if err := printConnection(cmd, rec, "verified"); err != nil {
					return err
				}
				if change.Changed() {
					fmt.Fprintf(cmd.OutOrStdout(), "  level changed since the last verification: %s\n", change)
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&as, "as", "", "the person verifying the connection (recorded)")
	return cmd
}

func newConnectionEnableCmd(enable bool) *cobra.Command {
	var as string
	use, verb := "enable", "enabled"
	if !enable {
		use, verb = "disable", "disabled"
	}
	cmd := &cobra.Command{
		Use:   use + " NAME --as NAME",
		Short: strings.ToUpper(use[:1]) + use[1:] + " a connection (its revision stays)",
		Args:  cli.WantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return cli.WithHost(cmd, func(h *host.Host) error {
				rec, err := connection.SetEnabled(cmd.Context(), h, args[0], enable, connection.Change{By: as, Now: time.Now()})
				if err != nil {
					return err
				}
				return printConnection(cmd, rec, verb)
			})
		},
	}
	cmd.Flags().StringVar(&as, "as", "", "the person making the change (recorded)")
	return cmd
}

func newConnectionListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List connections with their state, revision and authority digest",
		Args:  cli.WantArgs(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cli.WithHost(cmd, func(h *host.Host) error {
				list, err := connection.List(cmd.Context(), h)
				if err != nil {
					return err
				}
				if cli.WantJSON(cmd) {
					views := make([]connection.View, len(list))
					for i, l := range list {
						views[i] = connection.ViewOf(l.Name, l.Record)
					}
					return cli.PrintJSON(cmd.OutOrStdout(), views)
				}
				out := cmd.OutOrStdout()
				fmt.Fprintf(out, "%-20s %-20s %-4s %-12s %s\n", "NAME", "CONNECTOR", "REV", "STATE", "AUTHORITY")
				for _, l := range list {
					v := connection.ViewOf(l.Name, l.Record)
					fmt.Fprintf(out, "%-20s %-20s %-4d %-12s %s\n", v.Name, v.Connector, v.Revision, v.State, v.AuthorityDigest)
				}
				return nil
			})
		},
	}
}

func newConnectionShowCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "show NAME",
		Short: "Show a connection: configuration (secret names only), state and verified tools",
		Args:  cli.WantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return cli.WithHost(cmd, func(h *host.Host) error {
				rec, err := connection.Get(cmd.Context(), h, args[0])
				if err != nil {
					return err
				}
				return printConnectionShown(cmd, rec, connection.StoredLogin(h.Home, rec), connection.LevelNow(rec))
			})
		},
	}
}

// confinementFlags are the flags of a connection's confinement profile.
type confinementFlags struct {
	read, write          []string
	net, memory          string
	unconfined           bool
	openFiles, processes int64
}

func (f *confinementFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&f.read, "read", nil, "a file or folder the server may read (repeatable)")
	cmd.Flags().StringArrayVar(&f.write, "write", nil, "a file or folder the server may read and write (repeatable)")
	cmd.Flags().StringVar(&f.net, "net", "none", "TCP the server may open: none, any, or comma-separated ports to connect to")
	cmd.Flags().BoolVar(&f.unconfined, "unconfined", false, "run the server with oa's full rights (recorded, shown in the plan)")
	cmd.Flags().Int64Var(&f.openFiles, "max-open-files", 0, fmt.Sprintf("open files per process (default %d)", confine.DefaultLimits.OpenFiles))
	cmd.Flags().Int64Var(&f.processes, "max-processes", 0, fmt.Sprintf("processes in the server's tree, where its cgroup has the pids controller (default %d)", confine.DefaultLimits.Processes))
	cmd.Flags().StringVar(&f.memory, "max-memory", "", "address space per process, and the tree's memory where its cgroup has the memory controller, as bytes or with K, M, G (default 4G)")
}

// profile is the profile the flags give.
func (f *confinementFlags) profile() (*confine.Profile, error) {
	p := &confine.Profile{Unconfined: f.unconfined, Read: f.read, Write: f.write, Limits: confine.Limits{OpenFiles: f.openFiles, Processes: f.processes}}
	// A bad --net is left as given, for the library to refuse along with
	// every other problem of the profile.
	p.Net = f.net
	if net, err := confine.ParseNet(f.net); err == nil {
		p.Net = net
	}
	if f.memory != "" {
		var err error
		if p.Limits.MemoryBytes, err = confine.ParseSize(f.memory); err != nil {
			return nil, blocking.New(blocking.ConfinementInvalid, "%s", err).At("", "confinement.limits.memoryBytes")
		}
	}
	if f.openFiles < 0 || f.processes < 0 {
		return nil, blocking.New(blocking.ConfinementInvalid, "a limit is a positive number").At("", "confinement.limits")
	}
	return p, nil
}

func printConnection(cmd *cobra.Command, rec *connection.Record, verb string) error {
	return printConnectionLogin(cmd, rec, verb, nil, nil)
}

// printConnectionShown prints a connection shown: for an OAuth
// connection the state of its stored login, for a local confined one the
// level its server is held to on this host now.
func printConnectionShown(cmd *cobra.Command, rec *connection.Record, login *remote.LoginState, level *connection.HostLevel) error {
	return printConnectionLogin(cmd, rec, "", login, level)
}

// printConnectionLogin prints a connection and, for one shown, the state
// of an OAuth connection's stored login and a confined one's level now.
func printConnectionLogin(cmd *cobra.Command, rec *connection.Record, verb string, login *remote.LoginState, level *connection.HostLevel) error {
	v := connection.ViewOf(rec.Name, rec)
	v.Login, v.Level = login, level
	if cli.WantJSON(cmd) {
		return cli.PrintJSON(cmd.OutOrStdout(), v)
	}
	out := cmd.OutOrStdout()
	if verb != "" {
		fmt.Fprintf(out, "connection %s %s: revision %d, %s\n", v.Name, verb, v.Revision, v.State)
		if verb == "verified" && v.Enforced != nil {
			fmt.Fprintf(out, "  enforced   %s\n", v.Enforced)
		}
		return nil
	}
	fmt.Fprintf(out, "connection %s\n  connector  %s\n  revision   %d\n  state      %s\n", v.Name, v.Connector, v.Revision, v.State)
	if v.LastError != "" {
		fmt.Fprintf(out, "  last error %s (the last verification failed; oa explain %s)\n", v.LastError, v.LastError)
	}
	if r := v.Config.Remote; r != nil {
		printRemote(out, r, v.Protocol, v.Transport)
		printLoginState(out, v.Name, r, v.Login)
	} else {
		fmt.Fprintf(out, "  command    %s\n", connection.CommandLine(v.Config.Command, v.Config.Args))
	}
	for _, name := range slices.Sorted(maps.Keys(v.Config.Settings)) {
		fmt.Fprintf(out, "  setting    %s=%s\n", name, v.Config.Settings[name])
	}
	if len(v.Config.Env) > 0 {
		fmt.Fprintf(out, "  env        %s\n", strings.Join(v.Config.Env, ", "))
	}
	if v.Config.SecretFile != "" {
		fmt.Fprintln(out, "  secrets    from a 0600 file")
	}
	fmt.Fprintf(out, "  confinement %s\n", v.Confinement)
	if v.Enforced != nil {
		fmt.Fprintf(out, "  enforced   %s (at the last verification)\n", v.Enforced)
	}
	printLevel(out, v.Level)
	if v.Verified {
		fmt.Fprintf(out, "  authority  %s\n  inventory  %s (verified by %s)\n  tools      %s\n", v.AuthorityDigest, v.InventoryDigest, v.VerifiedBy, strings.Join(v.Tools, ", "))
	}
	return nil
}

// printRemote shows a remote server: its URL, whether the traffic is
// unencrypted, the authentication method and the header names (never a
// value: the record holds none).
func printRemote(out io.Writer, r *remote.Config, protocol, transport string) {
	kind := "Streamable HTTP"
	if transport == remote.TransportSSE {
		kind = "HTTP+SSE, the older transport: the server offers nothing else"
	}
	fmt.Fprintf(out, "  url        %s (%s)\n", r.URL, kind)
	if strings.HasPrefix(r.URL, "http://") {
		why := "loopback"
		if r.PlainHTTP {
			why = "--plain-http"
		}
		fmt.Fprintf(out, "  plain-http yes: unencrypted (%s)\n", why)
	}
	auth := r.Auth
	for i, h := range r.Headers {
		if i == 0 {
			auth += ":"
		}
		auth += " " + h.Name
	}
	if o := r.OAuth; o != nil {
		auth += " (" + o.Grant
		if o.ClientID != "" {
			auth += ", client " + o.ClientID
		}
		if o.ClientSecretFile != "" {
			auth += ", secret from a file"
		}
		if len(o.Scopes) > 0 {
			auth += ", scopes " + strings.Join(o.Scopes, " ")
		}
		auth += ")"
	}
	fmt.Fprintf(out, "  auth       %s\n", auth)
	if r.CAFile != "" {
		fmt.Fprintln(out, "  ca         from a file")
	}
	if protocol != "" {
		fmt.Fprintf(out, "  protocol   %s\n", protocol)
	}
}

func newConnectionLoginCmd() *cobra.Command {
	var as string
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "login NAME --as NAME",
		Short: "Authorize an OAuth connection: a person signs in in the browser; the tokens are stored encrypted",
		Long: `Login runs the OAuth 2.1 authorization-code flow (PKCE, resource
indicator) for a remote connection added with --oauth. It prints the
authorization URL on stderr: open it in a browser on this machine and sign
in. The answer comes back to a loopback redirect
(http://127.0.0.1:PORT/callback), waited for at most --timeout. The tokens
are stored encrypted under the host's token key in $OA_HOME/oauth (0600
files), refreshed when they expire and never printed, stored in the
database, planned or shown to an agent. oa connection logout NAME removes
them. The connection's revision does not change.`,
		Args: cli.WantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return cli.WithHost(cmd, func(h *host.Host) error {
				errOut := cmd.ErrOrStderr()
				show := func(u string) {
					fmt.Fprintf(errOut, "Open this URL in a browser on this machine to authorize connection %s (waiting up to %s):\n\n  %s\n\n", args[0], wait, u)
				}
				err := connection.Login(cmd.Context(), h, args[0], remote.LoginOptions{Show: show, Wait: wait}, connection.Change{By: as, Now: time.Now()})
				if err != nil {
					return err
				}
				return printLogin(cmd, args[0], "stored")
			})
		},
	}
	cmd.Flags().StringVar(&as, "as", "", "the person logging in (who authorizes the connection)")
	cmd.Flags().DurationVar(&wait, "timeout", remote.DefaultLoginWait, "how long to wait for the browser's answer")
	return cmd
}

func newConnectionLogoutCmd() *cobra.Command {
	var as string
	cmd := &cobra.Command{
		Use:   "logout NAME --as NAME",
		Short: "Remove an OAuth connection's stored tokens, revoking the refresh token where the server offers that",
		Args:  cli.WantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return cli.WithHost(cmd, func(h *host.Host) error {
				res, err := connection.Logout(cmd.Context(), h, args[0], connection.Change{By: as, Now: time.Now()})
				if err != nil {
					return err
				}
				state := "none stored"
				switch {
				case res.Removed && res.Revoked:
					state = "removed (refresh token revoked at the authorization server)"
				case res.Removed:
					state = "removed (not revoked at the authorization server: it offers no revocation or did not answer; the token expires there)"
				}
				return printLogin(cmd, args[0], state)
			})
		},
	}
	cmd.Flags().StringVar(&as, "as", "", "the person removing the login")
	return cmd
}

// printLogin prints what became of a connection's login (never a token).
func printLogin(cmd *cobra.Command, name, state string) error {
	if cli.WantJSON(cmd) {
		return cli.PrintJSON(cmd.OutOrStdout(), map[string]string{"connection": name, "login": state})
	}
	fmt.Fprintf(cmd.OutOrStdout(), "connection %s: login %s\n", name, state)
	return nil
}

// printLoginState shows whether an OAuth connection can get a token.
func printLoginState(out io.Writer, name string, r *remote.Config, l *remote.LoginState) {
	if l == nil || r.OAuth == nil {
		return
	}
	switch {
	case l.Problem != "":
		fmt.Fprintf(out, "  login      unusable (%s): oa connection logout %s, then oa connection login %s\n", l.Problem, name, name)
	case !l.Stored && r.OAuth.Grant == remote.GrantClientCredentials:
		fmt.Fprintln(out, "  login      none needed: a token is fetched with the client credentials")
	case !l.Stored:
		fmt.Fprintf(out, "  login      none: run oa connection login %s --as NAME\n", name)
	default:
		state := "stored"
		if l.Refreshable {
			state += ", refreshable"
		}
		if !l.AccessExpiry.IsZero() {
			state += ", access token until " + l.AccessExpiry.Format(time.RFC3339)
		}
		fmt.Fprintf(out, "  login      %s\n", state)
	}
}

// printLevel lists the level a confined server is held to on this host
// now: the guarantees held, those not held and why, and what the seccomp
// filter refuses.
func printLevel(out io.Writer, l *connection.HostLevel) {
	if l == nil {
		return
	}
	if l.Refused != "" {
		fmt.Fprintf(out, "  level      this host cannot confine the server now (%s)\n", l.Refused)
		return
	}
	fmt.Fprintf(out, "  level      holds %s (on this host now)\n", strings.Join(l.Guarantees, ", "))
	for _, n := range l.NotHeld {
		fmt.Fprintf(out, "  not held   %s\n", n)
	}
	if l.Seccomp == "" {
		fmt.Fprintln(out, "  seccomp    none: this kernel takes no seccomp filter")
		return
	}
	fmt.Fprintf(out, "  seccomp    filter %s denies:\n", l.Seccomp)
	for _, d := range l.SeccompDenies {
		fmt.Fprintf(out, "    %s\n", d)
	}
}
