package ledger

// The package functions below are the ledger's API before Open: each is
// the method of the same name on a Ledger opened for the call. They stay
// only until coordinator/ is converted (issue 42), then go.

import (
	"context"
	"net/http"
	"time"

	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/ledger/translog"
	"github.com/oa-dev/oa/signing"
)

// StoreOf is Open(h).
//
// Deprecated: use Open.
func StoreOf(h *host.Host) *Ledger { return Open(h) }

// HostSecret is Ledger.Secret of the host at home.
//
// Deprecated: use Ledger.Secret.
func HostSecret(home string) ([]byte, error) { return hostSecret(home) }

// RunKey is HostSecret.
//
// Deprecated: use Ledger.Secret.
func RunKey(home string) ([]byte, error) { return hostSecret(home) }

// ReceiptSigner is Ledger.ReceiptSigner of the host at home.
//
// Deprecated: use Ledger.ReceiptSigner.
func ReceiptSigner(home string, secret []byte) (*signing.Signer, error) {
	return receiptSigner(home, secret)
}

// with is the ledger of h sealing with signer.
func with(h *host.Host, signer *signing.Signer) *Ledger {
	l := Open(h)
	l.signer = signer
	return l
}

// SealRun is Ledger.SealRun.
//
// Deprecated: use Ledger.SealRun.
func SealRun(ctx context.Context, h *host.Host, signer *signing.Signer, runID string, now time.Time) (*RunRecord, error) {
	return with(h, signer).SealRun(ctx, runID, now)
}

// FinishRun is Ledger.FinishRun.
//
// Deprecated: use Ledger.FinishRun.
func FinishRun(ctx context.Context, h *host.Host, signer *signing.Signer, runID string, now time.Time, end func(*RunRecord) error) (*RunRecord, error) {
	return with(h, signer).FinishRun(ctx, runID, now, end)
}

// PinReceiptKey is Ledger.PinReceiptKey.
//
// Deprecated: use Ledger.PinReceiptKey.
func PinReceiptKey(ctx context.Context, h *host.Host, signer *signing.Signer, now time.Time) error {
	return with(h, signer).PinReceiptKey(ctx, now)
}

// CheckStore is Ledger.CheckStore.
//
// Deprecated: use Ledger.CheckStore.
func CheckStore(ctx context.Context, h *host.Host, signer *signing.Signer, cache *HeadCache, counts bool) (*Heads, error) {
	return with(h, signer).CheckStore(ctx, cache, counts)
}

// CheckCounts is Ledger.CheckCounts.
//
// Deprecated: use Ledger.CheckCounts.
func CheckCounts(ctx context.Context, h *host.Host, heads *Heads) error {
	return Open(h).CheckCounts(ctx, heads)
}

// ReadRun is Ledger.ReadRun.
//
// Deprecated: use Ledger.ReadRun.
func ReadRun(ctx context.Context, h *host.Host, runID string) (*RunRecord, error) {
	return Open(h).ReadRun(ctx, runID)
}

// ReceiptKeyPins is Ledger.ReceiptKeyPins.
//
// Deprecated: use Ledger.ReceiptKeyPins.
func ReceiptKeyPins(ctx context.Context, h *host.Host) (PinnedKeys, error) {
	return Open(h).ReceiptKeyPins(ctx)
}

// SubmitCheckpoint is Ledger.SubmitCheckpoint.
//
// Deprecated: use Ledger.SubmitCheckpoint.
func SubmitCheckpoint(ctx context.Context, h *host.Host, hc *http.Client, w host.Witness) (WitnessResult, error) {
	return Open(h).SubmitCheckpoint(ctx, hc, w)
}

// LogKey is Ledger.LogKey.
//
// Deprecated: use Ledger.LogKey.
func LogKey(h *host.Host) (*translog.Key, error) { return Open(h).LogKey() }

// LogCosigned is Ledger.LogCosigned.
//
// Deprecated: use Ledger.LogCosigned.
func LogCosigned(ctx context.Context, h *host.Host) (*translog.Head, []string, error) {
	return Open(h).LogCosigned(ctx)
}

// LogHead is Ledger.LogHead.
//
// Deprecated: use Ledger.LogHead.
func LogHead(ctx context.Context, h *host.Host) (*translog.Head, error) { return Open(h).LogHead(ctx) }

// ProveReceipt is Ledger.ProveReceipt.
//
// Deprecated: use Ledger.ProveReceipt.
func ProveReceipt(ctx context.Context, h *host.Host, digest string) (*translog.Proof, error) {
	return Open(h).ProveReceipt(ctx, digest)
}

// VerifyReceipts is Ledger.VerifyReceipts.
//
// Deprecated: use Ledger.VerifyReceipts.
func VerifyReceipts(ctx context.Context, h *host.Host) (*ChainReport, error) {
	return Open(h).VerifyReceipts(ctx)
}

// ListReceipts is Ledger.ListReceipts.
//
// Deprecated: use Ledger.ListReceipts.
func ListReceipts(ctx context.Context, h *host.Host) ([]ListedReceipt, error) {
	return Open(h).ListReceipts(ctx)
}
