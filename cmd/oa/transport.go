package main

import (
	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/oci"
)

// registryFlags are how every command that talks to a registry reaches
// it, named as oras names them: --plain-http, --ca-file, --insecure. One
// set, registered on each such command (copy registers it twice, for
// its source and destination, with the prefixes from- and to-).
type registryFlags struct {
	cmd       *cobra.Command
	prefix    string
	plainHTTP bool
	caFile    string
	insecure  bool
}

// register adds the flags to cmd, each name prefixed by prefix ("" or
// "from-", "to-"); what says which registry they are for in the help.
func (f *registryFlags) register(cmd *cobra.Command, prefix, what string) {
	f.cmd, f.prefix = cmd, prefix
	cmd.Flags().BoolVar(&f.plainHTTP, prefix+"plain-http", false, "use plain HTTP to "+what+" (a loopback registry falls back to it from HTTPS by itself; --"+prefix+"plain-http=false forces HTTPS)")
	cmd.Flags().StringVar(&f.caFile, prefix+"ca-file", "", "trust the CA certificates in this PEM file for "+what+", besides the system roots")
	cmd.Flags().BoolVar(&f.insecure, prefix+"insecure", false, "do not verify the TLS certificate of "+what+" (self-signed test registries only)")
}

// options are the oci.OpenOptions the flags say. An explicit
// --plain-http=false chooses HTTPS even on loopback.
func (f *registryFlags) options() oci.OpenOptions {
	o := oci.OpenOptions{PlainHTTP: f.plainHTTP, CAFile: f.caFile, Insecure: f.insecure}
	if f.cmd != nil && !f.plainHTTP && f.cmd.Flags().Changed(f.prefix+"plain-http") {
		o.HTTPS = true
	}
	return o
}

// changed reports whether any of the flags was given (for commands where
// they apply only with another flag).
func (f *registryFlags) changed() string {
	for _, name := range []string{"plain-http", "ca-file", "insecure"} {
		if f.cmd != nil && f.cmd.Flags().Changed(f.prefix+name) {
			return f.prefix + name
		}
	}
	return ""
}
