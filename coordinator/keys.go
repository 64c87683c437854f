package coordinator

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/internal/store"
)

// fingerprint is the keyed fingerprint of a request: inputs are never
// stored, only this.
func fingerprint(secret []byte, parts ...[]byte) string {
	m := hmac.New(sha256.New, secret)
	for _, p := range parts {
		fmt.Fprintf(m, "%d:", len(p))
		m.Write(p)
	}
	return "hmac-sha256:" + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// sealed is the payload of a request state.
type sealed struct {
	Value   json.RawMessage `json:"v"`
	Expires int64           `json:"exp"`
	Nonce   string          `json:"n"`
}

const stateDomain = "oa.request-state/v1\n"

// SealState seals v into an opaque token that expires after ttl and can
// be opened once: HMAC with the host's coordinator secret, so a client
// cannot make one up or change one.
func (c *Coordinator) SealState(v any, ttl time.Duration) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, 16)
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	payload, err := json.Marshal(sealed{b, c.now().Add(ttl).Unix(), base64.RawURLEncoding.EncodeToString(nonce)})
	if err != nil {
		return "", err
	}
	m := hmac.New(sha256.New, c.secret)
	m.Write([]byte(stateDomain))
	m.Write(payload)
	return base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil)), nil
}

// OpenState verifies a token made by SealState, refuses it when forged,
// expired or already used, and decodes its value into v. A token is used
// up by opening it.
func (c *Coordinator) OpenState(ctx context.Context, token string, v any) error {
	s, err := openSealed(c.secret, token, c.now())
	if err != nil {
		return err
	}
	exp := time.Unix(s.Expires, 0)
	if err := c.ledger.Tables().UseState(ctx, s.Nonce, exp, c.now()); errors.Is(err, store.ErrConflict) {
		return blocking.New(blocking.RequestStateInvalid, "the request state was used before")
	} else if err != nil {
		return err
	}
	if err := json.Unmarshal(s.Value, v); err != nil {
		return blocking.New(blocking.RequestStateInvalid, "the request state is malformed")
	}
	return nil
}

// openSealed checks a token's form, MAC and expiry (not its single use):
// the pure half of OpenState, and what FuzzOpenSealed feeds.
func openSealed(secret []byte, token string, now time.Time) (*sealed, error) {
	refuse := func(why string) error { return blocking.New(blocking.RequestStateInvalid, "%s", why) }
	// Only the characters SealState writes: Go's base64 decoder skips CR
	// and LF, which would let many strings stand for one token.
	if strings.IndexFunc(token, func(r rune) bool { return !isTokenRune(r) }) >= 0 {
		return nil, refuse("the request state is malformed")
	}
	p64, m64, ok := strings.Cut(token, ".")
	payload, err1 := base64.RawURLEncoding.DecodeString(p64)
	mac, err2 := base64.RawURLEncoding.DecodeString(m64)
	if !ok || err1 != nil || err2 != nil {
		return nil, refuse("the request state is malformed")
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(stateDomain))
	m.Write(payload)
	if !hmac.Equal(mac, m.Sum(nil)) {
		return nil, refuse("the request state was not made by this host")
	}
	var s sealed
	if err := json.Unmarshal(payload, &s); err != nil || s.Nonce == "" {
		return nil, refuse("the request state is malformed")
	}
	if !now.Before(time.Unix(s.Expires, 0)) {
		return nil, refuse("the request state has expired")
	}
	return &s, nil
}

// isTokenRune reports whether r may appear in a sealed token: the
// base64url alphabet and the dot between payload and MAC.
func isTokenRune(r rune) bool {
	return r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.'
}
