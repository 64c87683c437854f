package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/internal/store"
	"github.com/oa-dev/oa/signing"
)

// Receipt key pins. A head checkpoint is signed with the receipt key,
// which the host key vouches for once: a host-signed pin record naming
// the receipt key's id and public key, written the first time a key
// seals. So the host key (cosign's format: scrypt to open, 1–2 s under
// load) is decrypted once per receipt key on a host, not by every
// coordinator process's first seal; every later seal signs its
// checkpoint with the receipt key the process already holds.
//
// What the tamper evidence still rests on: a checkpoint verifies only
// with a receipt key that a host-signed pin names, so whoever can write
// the database but holds neither key can forge no checkpoint, no pin and
// no receipt. What it no longer gives: a thief of the receipt key alone
// could before forge receipts but not the host-signed head; now the head
// too. Both keys are 0600 files in the same 0700 keys folder, so in
// practice one theft yields both.
const (
	// ReceiptKeyKind is the versioned-record kind of pins, keyed by the
	// receipt key id.
	ReceiptKeyKind = "receipt-key"
	// ReceiptKeyPinType is the type of a pin record.
	ReceiptKeyPinType = "oa.receipt-key/v1"
)

// ReceiptKeyPin is the host-signed record that a receipt key is this
// host's: checkpoints it signs are the host's checkpoints.
type ReceiptKeyPin struct {
	Type string `json:"type"`
	Host string `json:"host"`
	Seq  int64  `json:"seq"`
	// KeyID and PublicKey (PEM) name the receipt key.
	KeyID     string    `json:"keyId"`
	PublicKey string    `json:"publicKey"`
	At        time.Time `json:"at"`
}

// PinnedKeys are the receipt keys the host pinned, by key id: only pins
// that verify with the host key are in it.
type PinnedKeys map[string]*signing.Verifier

// ReceiptKeyPins reads every pin of the host and keeps those that verify
// (read before a seal's write transaction, which must not use the
// database, and once per chain check).
func (l *Ledger) ReceiptKeyPins(ctx context.Context) (PinnedKeys, error) {
	h := l.h
	vs, err := h.Versions().LatestOfKind(ctx, ReceiptKeyKind)
	if err != nil {
		return nil, err
	}
	keys := PinnedKeys{}
	for i := range vs {
		if ver, ok := readPin(h, &vs[i]); ok {
			keys[vs[i].Key] = ver
		}
	}
	return keys, nil
}

// readPin verifies one pin with the host key and parses its public key,
// which must be the key its row is filed under.
func readPin(h *host.Host, v *store.Version) (*signing.Verifier, bool) {
	var pin ReceiptKeyPin
	if err := h.ReadVersion(v, ReceiptKeyPinType, &pin); err != nil || pin.Host != h.Policy.Host || pin.KeyID != v.Key {
		return nil, false
	}
	ver, err := signing.LoadVerifier([]byte(pin.PublicKey))
	if err != nil || ver.KeyID() != v.Key {
		return nil, false
	}
	return ver, true
}

// Key is the pinned receipt key id names (an attention.KeyOf); receipt_key_unpinned when the
// host pinned no such key (or its pin does not verify).
func (k PinnedKeys) Key(id string) (*signing.Verifier, error) {
	if ver, ok := k[id]; ok {
		return ver, nil
	}
	return nil, blocking.New(blocking.ReceiptKeyUnpinned, "the host has no pin of receipt key %s that verifies with the host key", id)
}

// chainNamesKey reports whether the store's last checkpoint or the
// checkpoint file is one signed with receipt key id. It reads them
// without verifying: it only decides to refuse.
func chainNamesKey(ctx context.Context, h *host.Host, id string) bool {
	names := func(record []byte) bool {
		var cp Checkpoint
		return json.Unmarshal(record, &cp) == nil && cp.Type == CheckpointType && cp.ReceiptKey == id
	}
	if v, err := h.Versions().Latest(ctx, store.KindCheckpoint, store.CheckpointKey); err != nil || v != nil && names(v.Record) {
		return true
	}
	b, err := os.ReadFile(filepath.Join(h.Home, CheckpointFile))
	if err != nil || len(b) > maxCheckpointFile {
		return err != nil && !errors.Is(err, fs.ErrNotExist)
	}
	var sc SignedCheckpoint
	return json.Unmarshal(b, &sc) == nil && names(sc.Record)
}

// errPinnedMeanwhile: another process pinned the key first.
var errPinnedMeanwhile = errors.New("coordinator: receipt key pinned meanwhile")

// PinReceiptKey makes sure the host pinned its receipt key
// (ReceiptSigner): it reads the pin (no host key needed) and only when
// there is none decrypts the host key and signs one. A pin that exists
// but does not verify is refused, never replaced.
func (l *Ledger) PinReceiptKey(ctx context.Context, now time.Time) error {
	signer, err := l.ReceiptSigner()
	if err != nil {
		return err
	}
	return pinReceiptKey(ctx, l.h, signer, now)
}

// pinReceiptKey is PinReceiptKey of signer's key.
func pinReceiptKey(ctx context.Context, h *host.Host, signer *signing.Signer, now time.Time) error {
	id := signer.KeyID()
	v, err := h.Versions().Latest(ctx, ReceiptKeyKind, id)
	if err != nil {
		return err
	}
	if v == nil && chainNamesKey(ctx, h, id) {
		// Checkpoints signed with this key exist, so its pin did too: a
		// pin removed is tampering, never papered over by a new one.
		return blocking.New(blocking.ReceiptKeyUnpinned, "the chain's checkpoints name receipt key %s but its host-signed pin is gone; no receipt is appended", id)
	}
	if v == nil { // the first seal with this key on this host
		pub, err := signer.Verifier().PublicPEM()
		if err != nil {
			return err
		}
		if err := h.PrepareSigner(); err != nil { // outside the write lock: scrypt is slow
			return err
		}
		_, err = h.Versions().Insert(ctx, ReceiptKeyKind, id, func(seq int64, prev *store.Version) ([]byte, []byte, error) {
			if prev != nil {
				return nil, nil, errPinnedMeanwhile
			}
			return h.SignRecord(ReceiptKeyPin{Type: ReceiptKeyPinType, Host: h.Policy.Host, Seq: seq, KeyID: id, PublicKey: string(pub), At: now.UTC().Truncate(time.Millisecond)})
		})
		if err != nil && !errors.Is(err, errPinnedMeanwhile) {
			return err
		}
	}
	v, err = h.Versions().Latest(ctx, ReceiptKeyKind, id)
	if err != nil {
		return err
	}
	if _, ok := readPin(h, v); !ok {
		return blocking.New(blocking.ReceiptKeyUnpinned, "the pin of receipt key %s does not verify with the host key; no receipt is appended", id)
	}
	return nil
}
