package connection

import (
	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector/remote"
	"github.com/oa-dev/oa/ir"
)

// checkRemote checks and normalizes a remote server's settings: no stdio
// command beside them, a URL the connector accepts (https, or http to a
// loopback address or with PlainHTTP) that carries no secret, and
// credentials only as names of files. Refusals name the field, never the
// value.
func checkRemote(opts *AddOptions) blocking.List {
	var refused blocking.List
	bad := func(path, format string, args ...any) {
		refused = append(refused, blocking.New(blocking.ConnectionInvalid, format, args...).At("", path))
	}
	cfg := &opts.Config
	if cfg.Command != "" || len(cfg.Args) > 0 {
		bad("command", "a remote connection (--url) is not started: give no command after --")
	}
	if len(cfg.Env) > 0 || len(cfg.Settings) > 0 || cfg.SecretFile != "" {
		bad("env", "a remote connection passes secrets as headers: use --header NAME --secret-file F or --bearer-secret-file F")
	}
	r, err := remote.Normalize(*cfg.Remote)
	if err != nil {
		for _, e := range blocking.Refusals(err) {
			bad(e.Path, "%s", e.Detail)
		}
		return refused
	}
	if findings := ir.ScanText(r.URL, false); len(findings) > 0 {
		bad("remote.url", "the URL looks like it holds a secret or customer value (%s); pass credentials with --header NAME --secret-file F or --bearer-secret-file F", findings[0].Rule)
	}
	cfg.Remote = &r
	return refused
}
