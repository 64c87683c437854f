package resolve

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/internal/canonical"
	"github.com/oa-dev/oa/internal/store"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/schemas"
)

// RegistryFile is the host capability registry under $OA_HOME.
const RegistryFile = "registry.cue"

// RegistrySignatureType is the type of a registry signature record.
const RegistrySignatureType = "oa.registry-signature/v1"

// Registry is a host's canonical capability registry. Its shape is
// #Registry in schemas/host/registry.cue.
type Registry struct {
	Host         string                        `json:"host"`
	Capabilities map[string]RegistryCapability `json:"capabilities"`
	Connectors   map[string]Connector          `json:"connectors"`
	Tools        []RuntimeTool                 `json:"tools"`

	digest string
	// aliasOf maps each alias to its canonical connector id.
	aliasOf map[string]string
}

// RegistryCapability is one canonical capability.
type RegistryCapability struct {
	Risk        ir.Risk     `json:"risk"`
	Description string      `json:"description"`
	Approval    ir.Approval `json:"approval"`
}

// Connector is one canonical connector.
type Connector struct {
	Aliases      []string `json:"aliases"`
	Availability string   `json:"availability"`
	Enabled      bool     `json:"enabled"`
}

// Available reports whether the registry lets the connector be used.
func (c Connector) Available() bool { return c.Availability == "available" && c.Enabled }

// RuntimeTool maps one connector tool to one capability.
type RuntimeTool struct {
	Name       string  `json:"name"`
	Connector  string  `json:"connector"`
	Capability string  `json:"capability"`
	Risk       ir.Risk `json:"risk"`
	Enabled    bool    `json:"enabled"`
}

// Digest is the sha256 of the registry's canonical JSON; it enters every
// plan resolved against the registry.
func (r *Registry) Digest() string { return r.digest }

// Canonical returns the connector id that id names: itself when it is
// canonical, its canonical id when it is an alias, "" when unknown.
func (r *Registry) Canonical(id string) (canonicalID string, isAlias bool) {
	if _, ok := r.Connectors[id]; ok {
		return id, false
	}
	if c, ok := r.aliasOf[id]; ok {
		return c, true
	}
	return "", false
}

// LoadRegistry reads and checks the registry at path: CUE of package host
// unified with #Registry; no alias shared or equal to a canonical id; no
// runtime tool listed twice for one connector. Refusals are located in the
// file.
func LoadRegistry(path string) (*Registry, error) {
	v, posOf, err := host.LoadHostFile(path, schemas.RegistryDef, blocking.RegistryUnreadable, blocking.RegistryInvalid)
	if err != nil {
		return nil, err
	}
	var r Registry
	if err := v.Decode(&r); err != nil {
		return nil, fmt.Errorf("resolve: decoding a registry that passed the schema: %w", err)
	}
	if err := r.finish(posOf); err != nil {
		return nil, err
	}
	return &r, nil
}

// finish indexes a decoded registry and sets its digest.
func (r *Registry) finish(posOf host.Locator) error {
	if err := r.index(posOf); err != nil {
		return err
	}
	b, err := canonical.Marshal(r)
	if err != nil {
		return err
	}
	r.digest = ir.DigestBytes(b)
	return nil
}

// index builds the alias map and refuses ambiguous names.
func (r *Registry) index(posOf host.Locator) error {
	var refused blocking.List
	r.aliasOf = map[string]string{}
	for _, id := range ir.SortStrings(keys(r.Connectors)) {
		for i, alias := range r.Connectors[id].Aliases {
			where := posOf("connectors", id, "aliases", strconv.Itoa(i))
			path := "connectors." + id + ".aliases[" + strconv.Itoa(i) + "]"
			if _, canon := r.Connectors[alias]; canon {
				refused = append(refused, blocking.New(blocking.RegistryInvalid, "an alias may not be a canonical connector id").At(where, path))
			} else if other, dup := r.aliasOf[alias]; dup && other != id {
				refused = append(refused, blocking.New(blocking.RegistryInvalid, "the alias is also an alias of connector %s", other).At(where, path))
			}
			r.aliasOf[alias] = id
		}
	}
	seen := map[[2]string]int{}
	for i, t := range r.Tools {
		k := [2]string{t.Connector, t.Name}
		if j, dup := seen[k]; dup {
			refused = append(refused, blocking.New(blocking.RegistryInvalid, "tool %s of connector %s is already listed at tools[%d]", t.Name, t.Connector, j).At(posOf("tools", strconv.Itoa(i)), "tools["+strconv.Itoa(i)+"]"))
		}
		seen[k] = i
	}
	return refused.Err()
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// RegistrySignature is a signed statement that a person reviewed the
// registry with RegistryDigest.
type RegistrySignature struct {
	Type           string    `json:"type"`
	Host           string    `json:"host"`
	Seq            int64     `json:"seq"`
	RegistryDigest string    `json:"registryDigest"`
	SignedBy       string    `json:"signedBy"`
	OSAccount      string    `json:"osAccount"`
	SignedAt       time.Time `json:"signedAt"`
}

// registryKey is the store key of the host's registry signatures.
const registryKey = "host"

// SignRegistry records, signed with the host key, that by reviewed r.
func SignRegistry(ctx context.Context, h *host.Host, r *Registry, by string, now time.Time) (*RegistrySignature, error) {
	if err := host.CheckPerson(by, "the registry signature"); err != nil {
		return nil, err
	}
	if r.Host != h.Policy.Host {
		return nil, blocking.New(blocking.RegistryInvalid, "the registry is for host %s, this host is %s", r.Host, h.Policy.Host).At("", "host")
	}
	sig := &RegistrySignature{Type: RegistrySignatureType, Host: h.Policy.Host, RegistryDigest: r.Digest(), SignedBy: by, OSAccount: host.OSAccount(), SignedAt: now.UTC().Truncate(time.Second)}
	if err := h.PrepareSigner(); err != nil {
		return nil, err
	}
	_, err := h.Versions().Insert(ctx, store.KindRegistry, registryKey, func(seq int64, _ *store.Version) ([]byte, []byte, error) {
		sig.Seq = seq
		return h.SignRecord(sig)
	})
	return sig, err
}

// CheckRegistrySigned refuses r unless the host's latest registry
// signature verifies and is for r's exact digest.
func CheckRegistrySigned(ctx context.Context, h *host.Host, r *Registry) (*RegistrySignature, error) {
	v, err := h.Versions().Latest(ctx, store.KindRegistry, registryKey)
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, blocking.New(blocking.RegistryUnsigned, "no registry signature on this host")
	}
	var sig RegistrySignature
	if err := h.ReadVersion(v, RegistrySignatureType, &sig); err != nil {
		return nil, blocking.New(blocking.RegistrySignatureBroken, "signature #%d does not verify", v.Seq)
	}
	if sig.RegistryDigest != r.Digest() {
		return nil, blocking.New(blocking.RegistrySignatureBroken, "signature #%d is for another registry digest", v.Seq)
	}
	return &sig, nil
}
