package translog

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/oa-dev/oa/blocking"
)

// The HTTP face of a witness, c2sp.org/tlog-witness: POST
// /add-checkpoint with "old SIZE", the consistency proof's hashes one a
// line, an empty line and the signed checkpoint. torchwood v0.6.1 keeps
// its witness library internal (its cmd/litewitness runs it), so the
// protocol's two ends are here, over Witness.AddCheckpoint;
// TestWitnessOverHTTP holds them to the status codes the spec gives, and
// cmd/oa's TestLitewitnessCosignsCoordinatorCheckpoints holds the client
// to a stock litewitness.

// AddCheckpointPath is the witness endpoint's path under its base URL.
const AddCheckpointPath = "/add-checkpoint"

// Bounds of the protocol: a request is "old N", at most 63 proof hashes
// and a checkpoint; an answer is a few cosignature lines, or a size.
const (
	MaxAddCheckpointBytes = 4<<10 + MaxCheckpointBytes
	MaxCosignatureBytes   = 4 << 10
)

// WitnessStore is where a witness keeps its state: a store whose Write
// runs fn in a write transaction (internal/store's DB).
type WitnessStore interface {
	Write(ctx context.Context, op string, fn func(tx *sql.Tx) error) error
}

// WitnessEvent is what the handler tells its operator of one request:
// the log's origin when known, the status answered and why, in fixed
// words (never the request's bytes or an error's text).
type WitnessEvent struct {
	Origin string
	Size   int64
	Status int
	Reason string
}

// Handler serves c2sp.org/tlog-witness's add-checkpoint over w, its
// state in db: 200 and the cosignature lines; 400 for a malformed
// request or an old size above the checkpoint's; 404 for a log the
// witness does not know; 403 for a checkpoint its key did not sign; 409
// (text/x.tlog.size, the size the witness knows) when the old size is
// not the one it last cosigned, or the same size has another root; 422
// when the consistency proof fails; 413 over MaxAddCheckpointBytes.
// Answers carry fixed words only. report, when not nil, is told of each
// request.
func (w *Witness) Handler(db WitnessStore, report func(WitnessEvent)) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+AddCheckpointPath, func(rw http.ResponseWriter, r *http.Request) {
		ev := w.serveAdd(rw, r, db)
		if report != nil {
			report(ev)
		}
	})
	return mux
}

func (w *Witness) serveAdd(rw http.ResponseWriter, r *http.Request, db WitnessStore) WitnessEvent {
	fail := func(status int, reason string) WitnessEvent {
		http.Error(rw, reason, status)
		return WitnessEvent{Status: status, Reason: reason}
	}
	body, err := io.ReadAll(http.MaxBytesReader(rw, r.Body, MaxAddCheckpointBytes))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return fail(http.StatusRequestEntityTooLarge, "the request is larger than an add-checkpoint request can be")
	case err != nil:
		return fail(http.StatusBadRequest, "the request body could not be read")
	}
	req, ok := parseAddCheckpoint(body)
	if !ok {
		return fail(http.StatusBadRequest, "the request is not old SIZE, proof hashes, an empty line and a checkpoint")
	}
	oldSize, proof, cp := req.oldSize, req.proof, req.checkpoint
	origin, _, _ := strings.Cut(string(cp), "\n")
	logKey, known := w.logs[origin]
	if !known {
		return fail(http.StatusNotFound, "this witness does not know the log")
	}
	n, err := note.Open(cp, note.VerifierList(logKey))
	if err != nil || !signedBy(n, logKey) {
		ev := fail(http.StatusForbidden, "the checkpoint is not signed by the log's key")
		ev.Origin = origin
		return ev
	}
	c, err := torchwood.ParseCheckpoint(n.Text)
	if err != nil || c.Origin != origin {
		ev := fail(http.StatusBadRequest, "the signed note is not a checkpoint")
		ev.Origin = origin
		return ev
	}
	withLog := func(ev WitnessEvent) WitnessEvent {
		ev.Origin, ev.Size = origin, c.N
		return ev
	}
	if oldSize > c.N {
		return withLog(fail(http.StatusBadRequest, "the old size is larger than the checkpoint's"))
	}
	var sigs []byte
	err = db.Write(r.Context(), "witness add-checkpoint", func(tx *sql.Tx) error {
		var err error
		sigs, err = w.AddCheckpoint(r.Context(), tx, oldSize, proof, cp)
		return err
	})
	var stale *ErrOldSize
	switch {
	case errors.As(err, &stale):
		return withLog(conflict(rw, stale.Size, "the old size is not the size this witness last cosigned"))
	case blocking.Has(err, blocking.LogForked) && oldSize == c.N:
		return withLog(conflict(rw, oldSize, "this witness cosigned another root at this size"))
	case blocking.Has(err, blocking.LogForked):
		return withLog(fail(http.StatusUnprocessableEntity, "the consistency proof does not show the checkpoint extends the one cosigned"))
	case blocking.Has(err, blocking.LogCheckpointUnverified):
		return withLog(fail(http.StatusForbidden, "the checkpoint is not signed by the log's key"))
	case err != nil:
		return withLog(fail(http.StatusInternalServerError, "the witness could not record the checkpoint"))
	}
	rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
	rw.Write(sigs)
	return withLog(WitnessEvent{Status: http.StatusOK, Reason: "cosigned"})
}

// conflict answers 409 with the size the witness knows, as
// c2sp.org/tlog-witness asks (text/x.tlog.size).
func conflict(rw http.ResponseWriter, size int64, reason string) WitnessEvent {
	rw.Header().Set("Content-Type", "text/x.tlog.size")
	rw.WriteHeader(http.StatusConflict)
	fmt.Fprintf(rw, "%d\n", size)
	return WitnessEvent{Status: http.StatusConflict, Reason: reason}
}

// addCheckpoint is an add-checkpoint request's body, split.
type addCheckpoint struct {
	oldSize    int64
	proof      tlog.TreeProof
	checkpoint []byte
}

// parseAddCheckpoint splits an add-checkpoint body strictly; ok is false
// for anything but "old SIZE", proof hashes, an empty line and a
// checkpoint.
func parseAddCheckpoint(body []byte) (req addCheckpoint, ok bool) {
	head, cp, ok := bytes.Cut(body, []byte("\n\n"))
	if !ok || len(cp) == 0 {
		return addCheckpoint{}, false
	}
	lines := strings.Split(string(head), "\n")
	s, ok := strings.CutPrefix(lines[0], "old ")
	if !ok {
		return addCheckpoint{}, false
	}
	old, err := strconv.ParseInt(s, 10, 64)
	if err != nil || old < 0 || strconv.FormatInt(old, 10) != s || len(lines)-1 > maxProofHashes {
		return addCheckpoint{}, false
	}
	var proof tlog.TreeProof
	for _, l := range lines[1:] {
		h, err := tlog.ParseHash(l)
		if err != nil {
			return addCheckpoint{}, false
		}
		proof = append(proof, h)
	}
	return addCheckpoint{oldSize: old, proof: proof, checkpoint: cp}, true
}

// AddCheckpointRequest is the body of an add-checkpoint request.
func AddCheckpointRequest(oldSize int64, proof tlog.TreeProof, checkpoint []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "old %d\n", oldSize)
	for _, h := range proof {
		b.WriteString(h.String() + "\n")
	}
	b.WriteString("\n")
	b.Write(checkpoint)
	return b.Bytes()
}

// ErrWitnessStatus is SubmitCheckpoint's error for an answer other than
// 200 or 409: the witness's status code, never its words.
type ErrWitnessStatus struct{ Status int }

func (e *ErrWitnessStatus) Error() string {
	return fmt.Sprintf("translog: the witness answered %d", e.Status)
}

// SubmitCheckpoint asks the witness at baseURL to cosign checkpoint,
// given the size it last cosigned and the consistency proof from it,
// and returns the cosignature lines that verify with the witness's key
// (a 200 answer with none is an error). 409 is *ErrOldSize with the size
// the witness knows; another status is *ErrWitnessStatus. The answer is
// read bounded (MaxCosignatureBytes); hc's timeouts and ctx bound the
// time.
func SubmitCheckpoint(ctx context.Context, hc *http.Client, baseURL string, witness note.Verifier, oldSize int64, proof tlog.TreeProof, checkpoint []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(baseURL, "/")+AddCheckpointPath, bytes.NewReader(AddCheckpointRequest(oldSize, proof, checkpoint)))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxCosignatureBytes+1))
	if err != nil {
		return nil, err
	}
	if len(body) > MaxCosignatureBytes {
		return nil, &ErrWitnessStatus{Status: resp.StatusCode}
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusConflict:
		s := strings.TrimSuffix(string(body), "\n")
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return nil, &ErrWitnessStatus{Status: resp.StatusCode}
		}
		return nil, &ErrOldSize{Size: n}
	default:
		return nil, &ErrWitnessStatus{Status: resp.StatusCode}
	}
	return CosignatureOf(checkpoint, body, witness)
}

// CosignatureOf returns the signature lines of sigs (a witness's
// answer) that are witness's and verify over checkpoint; none is
// log_witness_quorum.
func CosignatureOf(checkpoint, sigs []byte, witness note.Verifier) ([]byte, error) {
	text, _, ok := bytes.Cut(checkpoint, []byte("\n\n"))
	if !ok {
		return nil, blocking.New(blocking.LogCheckpointUnverified, "the checkpoint is not a signed note")
	}
	var out []byte
	for _, line := range bytes.SplitAfter(sigs, []byte("\n")) {
		if len(line) == 0 || line[len(line)-1] != '\n' {
			continue
		}
		n, err := note.Open(append(append(append([]byte{}, text...), "\n\n"...), line...), note.VerifierList(witness))
		if err == nil && len(n.Sigs) == 1 {
			out = append(out, line...)
		}
	}
	if len(out) == 0 {
		return nil, blocking.New(blocking.LogWitnessQuorum, "the witness %s answered no cosignature that verifies with its key", cut(witness.Name()))
	}
	return out, nil
}
