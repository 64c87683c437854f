package host

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/oa-dev/oa/blocking"
)

// The key the host holds for one MCP client installation signs the
// answers a person gives in that client's forms (an approval asked by
// elicitation), for the person the host policy names for it
// (persons.NAME.clients.CLIENT). `oa harness install --person NAME` makes
// it once per client and deployment, Ed25519 in OpenSSH's private key
// format, 0600 under $OA_HOME/keys/clients (0700), and prints the line
// the operator adds to the person; `oa coordinator serve --client CLIENT`
// loads it (LoadClientKey) and never makes one. A confined downstream
// server cannot read $OA_HOME/keys.

// clientNamePattern is #ClientName of the host policy schema; a
// deployment name follows bind's naming rule, which it also holds.
var clientNamePattern = regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)*$`)

// deploymentNamePattern admits what bind's naming rule admits and nothing
// that could leave the folder.
var deploymentNamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)

// ClientKeyFile is the file of the key the host holds for client's
// installation of deployment, under home.
func ClientKeyFile(home, client, deployment string) (string, error) {
	if !clientNamePattern.MatchString(client) || len(client) > 63 {
		return "", blocking.New(blocking.HarnessClientUnknown, "the client name breaks the naming rule")
	}
	if !deploymentNamePattern.MatchString(deployment) || len(deployment) > 63 {
		return "", blocking.New(blocking.DeploymentInvalid, "the deployment name breaks the naming rule")
	}
	return filepath.Join(home, "keys", "clients", client, deployment+".key"), nil
}

// EnsureClientKey returns the key the host holds for client's
// installation of deployment, made on first use: installing again keeps
// it, so the line in the policy stays right.
func EnsureClientKey(home, client, deployment string) (ssh.Signer, error) {
	path, err := ClientKeyFile(home, client, deployment)
	if err != nil {
		return nil, err
	}
	if s, err := LoadClientKey(home, client, deployment); err != nil || s != nil {
		return s, err
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	block, err := ssh.MarshalPrivateKey(priv, "oa client installation "+client+" "+deployment)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("client installation key: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".new-*")
	if err != nil {
		return nil, fmt.Errorf("client installation key: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return nil, err
	}
	if _, err := tmp.Write(pem.EncodeToMemory(block)); err != nil {
		tmp.Close()
		return nil, err
	}
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	// Made once: of two installs racing, the first key stays.
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("client installation key: %w", err)
	}
	return LoadClientKey(home, client, deployment)
}

// LoadClientKey returns the key the host holds for client's installation
// of deployment, or nil when none was made. A key file that is not one
// Ed25519 private key of mode 0600 is refused (key_invalid).
func LoadClientKey(home, client, deployment string) (ssh.Signer, error) {
	path, err := ClientKeyFile(home, client, deployment)
	if err != nil {
		return nil, err
	}
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, blocking.New(blocking.KeyInvalid, "the client installation's key cannot be read")
	case !fi.Mode().IsRegular() || fi.Mode().Perm()&0o077 != 0 || fi.Size() > 16<<10:
		return nil, blocking.New(blocking.KeyInvalid, "the client installation's key file is not a private file (0600) of one key")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, blocking.New(blocking.KeyInvalid, "the client installation's key cannot be read")
	}
	s, err := ssh.ParsePrivateKey(b)
	if err != nil || s.PublicKey().Type() != ssh.KeyAlgoED25519 {
		return nil, blocking.New(blocking.KeyInvalid, "the client installation's key is not one Ed25519 private key")
	}
	return s, nil
}

// ClientKeyLine is the public key line of an installation's key, as the
// host policy takes it under persons.NAME.clients.
func ClientKeyLine(pub ssh.PublicKey) string {
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub)))
}

// ClientPerson returns the person the policy names for client with key
// pub (persons.NAME.clients.CLIENT), or "" when it names none. Two
// persons naming the same installation's key is a refusal: the answer
// could be either's.
func (p *Policy) ClientPerson(client string, pub ssh.PublicKey) (string, error) {
	if p == nil || pub == nil {
		return "", nil
	}
	want := string(pub.Marshal())
	found := ""
	for name, per := range p.Persons {
		if k := per.ClientKey(client); k != nil && string(k.Marshal()) == want {
			if found != "" {
				return "", blocking.New(blocking.PolicyPersonInvalid, "the key of client installation %s is under both %s and %s", client, found, name)
			}
			found = name
		}
	}
	return found, nil
}
