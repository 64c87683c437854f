package ledger

import (
	"sync"

	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/internal/store"
	"github.com/oa-dev/oa/ledger/translog"
	"github.com/oa-dev/oa/signing"
)

// Ledger is one host's ledger, opened once and shared: the host, its
// typed store (the runs, attention, receipts and used request states
// tables, store.go) and the keys every call used to load again — the
// coordinator secret, the receipt signer and the log key — each read (or
// made) on its first use and kept. Opening reads nothing, so a reader
// that never seals (an auditor verifying a bundle offline) never makes a
// key in the folder it reads. It is safe for concurrent use.
type Ledger struct {
	h  *host.Host
	db *store.DB

	mu     sync.Mutex
	secret []byte
	signer *signing.Signer
	logKey *translog.Key
}

// Open is the ledger of host h, over h's store. Nothing can fail here:
// the store is open with the host, and the keys are loaded when a call
// first needs them (the errors are that call's).
func Open(h *host.Host) *Ledger { return &Ledger{h: h, db: h.Store()} }

// Host is the host whose ledger this is.
func (l *Ledger) Host() *host.Host { return l.h }

// Secret is the host's coordinator secret ($OA_HOME/keys/coordinator.secret,
// made on first use): the key of the run records' MACs, the verify mark,
// the sealed receipt key copy, the input fingerprints and request states.
// A failed read is not kept: the next call tries again.
func (l *Ledger) Secret() ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.secretLocked()
}

func (l *Ledger) secretLocked() ([]byte, error) {
	if l.secret != nil {
		return l.secret, nil
	}
	k, err := hostSecret(l.h.Home)
	if err != nil {
		return nil, err
	}
	l.secret = k
	return k, nil
}

// ReceiptSigner is the host's receipt signer (receiptSigner: made on
// first use, loaded from its sealed copy), loaded once.
func (l *Ledger) ReceiptSigner() (*signing.Signer, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.signer != nil {
		return l.signer, nil
	}
	secret, err := l.secretLocked()
	if err != nil {
		return nil, err
	}
	s, err := receiptSigner(l.h.Home, secret)
	if err != nil {
		return nil, err
	}
	l.signer = s
	return s, nil
}

// LogKey is the host's log key ($OA_HOME/keys/log.key, made on first
// use), whose origin is translog.Origin of the host's name; loaded once.
func (l *Ledger) LogKey() (*translog.Key, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.logKey != nil {
		return l.logKey, nil
	}
	k, err := translog.LoadKey(l.h.Home, translog.Origin(l.h.Policy.Host))
	if err != nil {
		return nil, err
	}
	l.logKey = k
	return k, nil
}
