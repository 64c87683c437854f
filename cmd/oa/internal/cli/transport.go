package cli

import (
	"errors"
	"time"

	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/oci"
)

// RegistryFlags are how every command that talks to a registry reaches
// it, named as oras names them: --plain-http, --ca-file, --insecure. One
// set, registered on each such command (copy registers it twice, for
// its source and destination, with the prefixes from- and to-).
type RegistryFlags struct {
	cmd       *cobra.Command
	prefix    string
	plainHTTP bool
	caFile    string
	insecure  bool
	// requestTimeout and timeout replace the host policy's (or the
	// default) registry deadlines when given.
	requestTimeout, timeout positiveDuration
}

// positiveDuration is a duration flag that must be above zero: a zero or
// negative timeout is a mistake on the command line, never "no bound".
type positiveDuration time.Duration

// String renders the value ("" when unset, so help shows no default
// of 0s: the default is the policy's).
func (d *positiveDuration) String() string {
	if *d == 0 {
		return ""
	}
	return time.Duration(*d).String()
}

// Set parses a Go duration above zero.
func (d *positiveDuration) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil || v <= 0 {
		return errors.New("want a Go duration above zero, such as 30s or 5m")
	}
	*d = positiveDuration(v)
	return nil
}

// Type names the value in help.
func (d *positiveDuration) Type() string { return "duration" }

// Register adds the flags to cmd, each name prefixed by prefix ("" or
// "from-", "to-"); what says which registry they are for in the help.
func (f *RegistryFlags) Register(cmd *cobra.Command, prefix, what string) {
	f.cmd, f.prefix = cmd, prefix
	cmd.Flags().BoolVar(&f.plainHTTP, prefix+"plain-http", false, "use plain HTTP to "+what+" (a loopback registry falls back to it from HTTPS by itself; --"+prefix+"plain-http=false forces HTTPS)")
	cmd.Flags().StringVar(&f.caFile, prefix+"ca-file", "", "trust the CA certificates in this PEM file for "+what+", besides the system roots")
	cmd.Flags().BoolVar(&f.insecure, prefix+"insecure", false, "do not verify the TLS certificate of "+what+" (self-signed test registries only)")
	cmd.Flags().Var(&f.requestTimeout, prefix+"request-timeout", "the longest one request to "+what+" may take, its answer's body included (default: the host policy's limits.registry_request_seconds, else 1m)")
	cmd.Flags().Var(&f.timeout, prefix+"timeout", "the longest all the work with "+what+" may take (default: the host policy's limits.registry_operation_seconds, else 10m)")
}

// Options are the oci.OpenOptions the flags say. An explicit
// --plain-http=false chooses HTTPS even on loopback.
func (f *RegistryFlags) Options() oci.OpenOptions {
	o := oci.OpenOptions{PlainHTTP: f.plainHTTP, CAFile: f.caFile, Insecure: f.insecure,
		RequestTimeout: time.Duration(f.requestTimeout), OperationTimeout: time.Duration(f.timeout)}
	if f.cmd != nil && !f.plainHTTP && f.cmd.Flags().Changed(f.prefix+"plain-http") {
		o.HTTPS = true
	}
	return o
}

// Changed reports whether any of the flags was given (for commands where
// they apply only with another flag).
func (f *RegistryFlags) Changed() string {
	for _, name := range []string{"plain-http", "ca-file", "insecure", "request-timeout", "timeout"} {
		if f.cmd != nil && f.cmd.Flags().Changed(f.prefix+name) {
			return f.prefix + name
		}
	}
	return ""
}
