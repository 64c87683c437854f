package fleet

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/ledger"
	"github.com/oa-dev/oa/ledger/translog"
	"github.com/oa-dev/oa/oci"
)

// LogType is the type of a host's published log checkpoint.
const LogType = "oa.fleet.log/v1"

// LogArtifactType is the artifact type of a published log checkpoint.
const LogArtifactType = "application/vnd.oa.fleet.log.v1"

// logPrefix is the tag prefix of published log checkpoints.
const logPrefix = "log-"

// LogTag is the tag of host id's published log checkpoint.
func LogTag(id string) string { return logPrefix + id }

// Bounds of a log checkpoint document as the auditor reads it.
const (
	maxLogWitnesses  = 64
	maxLogProofLines = 63
)

// LogCheckpoint is what a host publishes of its receipts log under
// log-<host>, signed with its host key like its status: the log's public
// key, its newest checkpoint (the newest its witnesses cosigned, with
// their cosignatures, else the newest), the witnesses and quorum of its
// policy, and, when the checkpoint it replaces was smaller, the
// consistency proof from that size. It carries no receipt, path or
// secret: a checkpoint is a size and a root.
type LogCheckpoint struct {
	Type  string `json:"type"`
	Fleet string `json:"fleet"`
	Host  string `json:"host"`
	// LogKey is the log's signed-note verifier key (origin oa/<host>).
	LogKey string `json:"logKey"`
	// Checkpoint is the c2sp.org/tlog-checkpoint signed note, with the
	// witnesses' c2sp.org/tlog-cosignature lines.
	Checkpoint string `json:"checkpoint"`
	// Witnesses are the witness keys of the host's policy, Quorum how
	// many must cosign.
	Witnesses []string `json:"witnesses"`
	Quorum    int      `json:"quorum"`
	// PreviousSize and Consistency are the size of the checkpoint this one
	// replaced under the tag and the proof (base64 hashes) that the tree
	// of that size is a prefix of this one; absent when there was none.
	PreviousSize int64    `json:"previousSize,omitempty"`
	Consistency  []string `json:"consistency,omitempty"`
	// PublishedAt is when the host published it; a host republishes an
	// unchanged checkpoint every StatusRefresh, so an auditor tells a
	// host that stopped from one whose log did not grow.
	PublishedAt time.Time `json:"publishedAt"`
}

// LogPublished is what a provisioning run did with the host's log.
type LogPublished struct {
	Tag  string `json:"tag"`
	Size int64  `json:"size"`
	// Cosignatures is how many witnesses cosigned the checkpoint.
	Cosignatures int `json:"cosignatures"`
	// Changed says a new document was pushed.
	Changed bool `json:"changed"`
}

// PublishLog publishes the log checkpoint of the host under home to the
// fleet repository (REGISTRY/REPO), as Provision does on every run: see
// LogCheckpoint. A host whose log is empty publishes nothing (nil).
func PublishLog(ctx context.Context, home, repository string, opts ProvisionOptions) (*LogPublished, error) {
	ref, err := oci.ParseRef(repository, oci.RefOptions{})
	if err != nil || ref.Registry == "" {
		return nil, blocking.New(blocking.FleetEnvelopeInvalid, "the fleet repository must be REGISTRY/REPO")
	}
	h, err := host.Open(ctx, home)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	if h.Policy.Fleet == nil {
		return nil, blocking.New(blocking.FleetNotTrusted, "the host policy has no fleet section")
	}
	opts.OpenOptions = h.Policy.ReleaseOptions(opts.OpenOptions)
	target, err := oci.Open(ctx, ref, opts.OpenOptions)
	if err != nil {
		return nil, err
	}
	p := &provisioner{h: h, home: home, repo: ref, target: target, opts: opts, now: opts.Now.UTC().Truncate(time.Second), fleet: h.Policy.Fleet}
	return p.publishLog(ctx)
}

// publishLog pushes the host's log checkpoint under log-<host> unless
// the document there (signed by this host) already carries it and was
// published within StatusRefresh: an unchanged log costs one manifest
// read and no host-key decryption.
func (p *provisioner) publishLog(ctx context.Context) (*LogPublished, error) {
	l := ledger.Open(p.h)
	head, _, err := l.LogCosigned(ctx)
	if err != nil {
		return nil, err
	}
	if head == nil {
		if head, err = l.LogHead(ctx); err != nil || head == nil {
			return nil, err
		}
	}
	key, err := l.LogKey()
	if err != nil {
		return nil, err
	}
	id := p.h.Policy.Host
	pub := &LogPublished{Tag: LogTag(id), Size: head.N, Cosignatures: cosignatures(head.Note)}
	prev, err := p.ownLog(ctx, id)
	if err != nil {
		return nil, err
	}
	refresh := p.opts.StatusRefresh
	if refresh <= 0 {
		refresh = DefaultStatusRefresh
	}
	if prev != nil && prev.Checkpoint == string(head.Note) && !p.now.Before(prev.PublishedAt) && p.now.Before(prev.PublishedAt.Add(refresh)) {
		return pub, nil
	}
	doc := LogCheckpoint{Type: LogType, Fleet: p.fleet.Name, Host: id, LogKey: key.VerifierKey(), Checkpoint: string(head.Note), Witnesses: []string{}, PublishedAt: p.now}
	if w := p.h.Policy.Witnessing; w != nil {
		for _, name := range w.Names() {
			doc.Witnesses = append(doc.Witnesses, w.Witnesses[name].Key)
		}
		doc.Quorum = w.Quorum
	}
	if prev != nil {
		if c, _, err := translog.OpenCheckpoint([]byte(prev.Checkpoint), translog.Policy{Log: key.Verifier()}); err == nil {
			switch {
			case c.N == head.N && prev.Checkpoint == string(head.Note):
				// The same checkpoint again: its proof still helps an
				// auditor that missed the one before.
				doc.PreviousSize, doc.Consistency = prev.PreviousSize, prev.Consistency
			case c.N > 0 && c.N < head.N:
				proof, err := l.ProveLogConsistency(ctx, c.N, head.N)
				if err != nil {
					return nil, err
				}
				doc.PreviousSize, doc.Consistency = c.N, make([]string, len(proof))
				for i, h := range proof {
					doc.Consistency[i] = base64.StdEncoding.EncodeToString(h[:])
				}
			}
		}
	}
	payload, sig, err := p.h.SignRecord(&doc)
	if err != nil {
		return nil, err
	}
	pem, err := os.ReadFile(filepath.Join(p.home, host.HostPubFile))
	if err != nil {
		return nil, fmt.Errorf("reading host key: %w", err)
	}
	if _, err := pushDocument(ctx, p.target, LogArtifactType, pub.Tag, payload, sig, p.h.KeyID(), pem); err != nil {
		return nil, err
	}
	pub.Changed = true
	return pub, nil
}

// ownLog reads the log checkpoint under log-<id> when this host signed
// it for this fleet; nil otherwise (none, another's, malformed).
func (p *provisioner) ownLog(ctx context.Context, id string) (*LogCheckpoint, error) {
	doc, err := readDocument(ctx, p.target, LogArtifactType, LogTag(id))
	switch {
	case err == errMalformed || err == nil && doc == nil:
		return nil, nil
	case err != nil:
		return nil, err
	}
	var d LogCheckpoint
	if p.h.VerifyRecord(doc.Payload, doc.Signature) != nil || doc.decode(&d) != nil || d.Type != LogType || d.Fleet != p.fleet.Name || d.Host != id {
		return nil, nil
	}
	return &d, nil
}

// cosignatures counts the signature lines of a signed note after the
// first (the log's own): one line each.
func cosignatures(note []byte) int {
	_, sigs, _ := bytes.Cut(note, []byte("\n\n"))
	return max(bytes.Count(sigs, []byte("\n"))-1, 0)
}
