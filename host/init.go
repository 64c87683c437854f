package host

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/signing"
)

// InitOptions say what a new host trusts from the start.
type InitOptions struct {
	// Host names the host; default "oa-host".
	Host string
	// Publishers and Authorities map policy names to public key PEMs.
	Publishers, Authorities map[string][]byte
	// HostKey, when set, is the host private key to install (cosign's
	// format, no password) instead of a newly generated one: a host
	// moved to new hardware keeps its key, and test hosts use keys made
	// once instead of paying scrypt for each.
	HostKey []byte
}

// Init writes a working host under home: a host key pair (cosign's
// format, no password, 0600, the way hosts keep their own keys) and a
// starter policy trusting the given keys. It never overwrites a file.
func Init(home string, opts InitOptions) error {
	if opts.Host == "" {
		opts.Host = "oa-host"
	}
	if err := CheckHome(home); err != nil {
		return err
	}
	for _, f := range []string{HostKeyFile, HostPubFile, PolicyFile} {
		if _, err := os.Stat(filepath.Join(home, f)); !errors.Is(err, fs.ErrNotExist) {
			return blocking.New(blocking.HostExists, "%s exists under the host folder", f)
		}
	}
	priv, pub, err := hostKeyPair(opts.HostKey)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(home, "keys"), 0o700); err != nil {
		return err
	}
	policy := StarterPolicy(opts)
	for _, f := range []struct {
		name string
		data []byte
		mode os.FileMode
	}{{HostKeyFile, priv, 0o600}, {HostPubFile, pub, 0o644}, {PolicyFile, []byte(policy), 0o644}} {
		if err := os.WriteFile(filepath.Join(home, f.name), f.data, f.mode); err != nil {
			return err
		}
	}
	_, err = LoadPolicy(filepath.Join(home, PolicyFile))
	return err
}

// hostKeyPair is the given host private key and its public key, or a new
// pair when none is given.
func hostKeyPair(given []byte) (priv, pub []byte, err error) {
	if given == nil {
		return signing.GenerateKeys(nil)
	}
	s, err := signing.LoadSigner(given, nil)
	if err != nil {
		return nil, nil, err
	}
	pub, err = s.Verifier().PublicPEM()
	if err != nil {
		return nil, nil, err
	}
	return given, pub, nil
}

// StarterPolicy renders a starter host policy trusting the given keys,
// speaking this oa's protocol, offering the features oa provides and the
// default pure packages, with a ceiling that admits any capability.
func StarterPolicy(opts InitOptions) string {
	var b strings.Builder
	fmt.Fprintf(&b, "package host\n\n// Written by `oa host init`. Narrow it to what this host should ever admit.\nhost: %q\n\n", opts.Host)
	keys := func(field string, m map[string][]byte) {
		fmt.Fprintf(&b, "%s: {\n", field)
		names := make([]string, 0, len(m))
		for n := range m {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			fmt.Fprintf(&b, "\t%s: key: %s\n", n, strconv.Quote(string(m[n])))
		}
		b.WriteString("}\n")
	}
	keys("publishers", opts.Publishers)
	keys("authorities", opts.Authorities)
	fmt.Fprintf(&b, `
protocols: [%q]
features: ["coordinator.stdio", "approvals.person"]
evaluator_authorities: ["oa.dev/evaluators/cue@v1"]
pure_packages: ["crypto/sha256", "encoding/base64", "encoding/hex", "encoding/json", "list", "math", "math/bits", "path", "regexp", "strconv", "strings", "struct", "time"]
ceiling: {
	capabilities: ["*"]
	max_risk:     "consequential"
}
profiles: {
	demo: {attestations: 1, lifetime: "24h"}
	standard: {attestations: 1, lifetime: "720h"}
	regulated: {attestations: 2, lifetime: "168h"}
}
default_profile: "standard"
max_lifetime:    "2160h"
`, ir.Protocol)
	return b.String()
}

// KeyName derives a policy name for a key from its file name.
func KeyName(path string) string {
	base := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	var b strings.Builder
	for _, r := range strings.ToLower(base) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9' && b.Len() > 0:
			b.WriteRune(r)
		case b.Len() > 0:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "key"
	}
	return b.String()
}
