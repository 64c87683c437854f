package admit

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/internal/canonical"
	"github.com/oa-dev/oa/internal/store"
	"github.com/oa-dev/oa/ir"
)

// The revocation head. A revocation is a row, and a row can be removed by
// whoever can write the database file (dropping the trigger first); a
// removed revocation would put the release back in service. So every
// revocation is written in one transaction with a host-signed head that
// counts the revocations and chains their digests (version N of
// (RevocationHeadKind, RevocationHeadKey) covers revocations 1…N), and
// the same signed bytes are kept outside the database in
// $OA_HOME/RevocationHeadFile (only ever moved forward). StatusOf (and so
// the plan check, `oa bind inspect` and the coordinator) and `oa receipts
// verify` hold the revocations to both with CheckRevocations.
const (
	RevocationHeadType = "oa.revocation-head/v1"
	RevocationHeadKind = "revocation-head"
	RevocationHeadKey  = "revocations"
	RevocationHeadFile = "revocations.head"
	// maxRevocationHeadFile bounds the head file read.
	maxRevocationHeadFile = 64 << 10
)

// RevocationHead is the host-signed head of the revocations: Count
// revocations whose record digests chain to Head.
type RevocationHead struct {
	Type  string    `json:"type"`
	Host  string    `json:"host"`
	Count int64     `json:"count"`
	Head  string    `json:"head"`
	At    time.Time `json:"at"`
}

// chainRevocations is the chain digest after each revocation, in order:
// out[i] covers revocations 1…i+1.
func chainRevocations(rows []RevocationRow) []string {
	out := make([]string, len(rows))
	prev := ""
	for i, r := range rows {
		prev = ir.DigestBytes([]byte(prev + "\n" + ir.DigestBytes(r.Record)))
		out[i] = prev
	}
	return out
}

// insertRevocation appends a revocation and the signed head that covers
// it in one write transaction, then moves the head file forward.
func insertRevocation(ctx context.Context, h *host.Host, artifactDigest string, record, signature []byte, now time.Time) error {
	if artifactDigest == "" {
		return errors.New("store: insert revocation: empty artifact digest")
	}
	if err := store.CheckRecord(record, signature); err != nil {
		return fmt.Errorf("store: insert revocation of %s: %w", artifactDigest, err)
	}
	var head store.Version
	err := storeOf(h).InsertRevocationWithHead(ctx, artifactDigest, record, signature, func(rows []RevocationRow, prev *store.Version) (store.Version, error) {
		chain := chainRevocations(rows)
		// A head after revocations were removed would sign their removal:
		// a store that already disagrees is refused.
		if prev != nil && (prev.Seq >= int64(len(rows)) || chainAt(h, prev, chain) != nil) {
			return store.Version{}, blocking.New(blocking.RevocationsDisagree, "the store's revocations are not the ones head #%d signed; no revocation is added", prev.Seq)
		}
		rec, sig, err := h.SignRecord(RevocationHead{Type: RevocationHeadType, Host: h.Policy.Host, Count: int64(len(rows)), Head: chain[len(chain)-1], At: now.UTC().Truncate(time.Second)})
		if err != nil {
			return store.Version{}, err
		}
		head = store.Version{Kind: RevocationHeadKind, Key: RevocationHeadKey, Seq: int64(len(rows)), Record: rec, Signature: sig}
		return head, nil
	})
	if err != nil {
		return err
	}
	return writeHeadFile(h.Home, &head)
}

// chainAt checks that a stored head verifies and names chain's digest at
// its count.
func chainAt(h *host.Host, v *store.Version, chain []string) error {
	head, err := readHead(h, v.Record, v.Signature)
	if err != nil {
		return err
	}
	if head.Count != v.Seq || head.Count > int64(len(chain)) || chain[head.Count-1] != head.Head {
		return blocking.New(blocking.RevocationsDisagree, "the store holds %d revocations; revocation head #%d names others", len(chain), head.Count)
	}
	return nil
}

// readHead verifies a signed head with the host key and decodes it.
func readHead(h *host.Host, record, signature []byte) (*RevocationHead, error) {
	var head RevocationHead
	if len(record) > maxRevocationHeadFile || h.VerifyRecord(record, signature) != nil ||
		canonical.DecodeStrict(record, &head) != nil || head.Type != RevocationHeadType || head.Host != h.Policy.Host || head.Count < 1 {
		return nil, blocking.New(blocking.RevocationsDisagree, "a revocation head does not verify with the host key")
	}
	return &head, nil
}

// writeHeadFile replaces $OA_HOME's head file with v unless it already
// holds a later head.
func writeHeadFile(home string, v *store.Version) error {
	return host.KeepSignedCopy(home, RevocationHeadFile, "count", v)
}

// CheckRevocations holds the host's revocations to its signed revocation
// head, in the store and in $OA_HOME: the store must hold exactly the
// revocations the store's head signs, and at least those the file's head
// signs. A host that never signed a head (no revocation since heads were
// introduced) has nothing to hold them to. Its refusal is
// revocations_disagree; the error is a refusal or a program fault.
func CheckRevocations(ctx context.Context, h *host.Host) error {
	rows, err := storeOf(h).Revocations(ctx, "")
	if err != nil {
		return err
	}
	v, err := h.Versions().Latest(ctx, RevocationHeadKind, RevocationHeadKey)
	if err != nil {
		return err
	}
	file, err := os.ReadFile(filepath.Join(h.Home, RevocationHeadFile))
	if errors.Is(err, fs.ErrNotExist) {
		file = nil
	} else if err != nil {
		return err
	}
	chain := chainRevocations(rows)
	if v != nil {
		if err := chainAt(h, v, chain); err != nil {
			return err
		}
		if v.Seq != int64(len(rows)) {
			return blocking.New(blocking.RevocationsDisagree, "the store holds %d revocations, revocation head #%d signs %d", len(rows), v.Seq, v.Seq)
		}
	}
	if file == nil {
		return nil
	}
	var sh host.SignedCopy
	if len(file) > maxRevocationHeadFile || canonical.DecodeStrict(file, &sh) != nil {
		return blocking.New(blocking.RevocationsDisagree, "%s is malformed", RevocationHeadFile)
	}
	fh, err := readHead(h, sh.Record, sh.Signature)
	if err != nil {
		return err
	}
	if v == nil || fh.Count > v.Seq || chain[fh.Count-1] != fh.Head {
		return blocking.New(blocking.RevocationsDisagree, "%s signs %d revocations the store does not hold", RevocationHeadFile, fh.Count)
	}
	return nil
}
