package coordinator

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/oa-dev/oa/blocking"
)

var fuzzSecret = []byte("0123456789abcdef0123456789abcdef")

// FuzzOpenSealed: whatever a client sends as a request state, openSealed
// never panics, refuses it with request_state_invalid unless it is a token
// sealed with the host secret, and its refusal never repeats the token.
func FuzzOpenSealed(f *testing.F) {
	// The one good token, made here by hand (a fixed nonce, so every
	// fuzzing process has the same one): the oracle for what may open.
	payload := `{"v":{"run":"run_1"},"exp":1800003600,"n":"fixed-nonce"}`
	m := hmac.New(sha256.New, fuzzSecret)
	m.Write([]byte(stateDomain))
	m.Write([]byte(payload))
	good := base64.RawURLEncoding.EncodeToString([]byte(payload)) + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
	f.Add(good)
	f.Add(good + "x")
	f.Add(strings.Replace(good, ".", "..", 1))
	f.Add("")
	f.Add(".")
	f.Add("e30.e30")
	f.Fuzz(func(t *testing.T, token string) {
		s, err := openSealed(fuzzSecret, token, time.Unix(1_800_000_000, 0))
		if token == good {
			// (A token equal to it in all but base64 padding bits cannot
			// decode to other bytes: RawURLEncoding is strict.)
			if err != nil {
				t.Fatalf("a sealed token was refused: %v", err)
			}
			if s == nil {
				t.Fatal("a sealed token opened to nothing")
			}
			return
		}
		if err == nil {
			// Only a token with the right MAC opens; the fuzzer cannot
			// forge one, so any other accepted token is a bug.
			t.Fatalf("an unsealed token opened: %q", token)
		}
		l := blocking.Refusals(err)
		if len(l) != 1 {
			t.Fatalf("%d refusals, want 1: %v", len(l), err)
		}
		if l[0].Code != blocking.RequestStateInvalid {
			t.Fatalf("refusal %s, want %s", l[0].Code, blocking.RequestStateInvalid)
		}
		if len(token) > 8 && strings.Contains(err.Error(), token) {
			t.Fatalf("the refusal repeats the token")
		}
	})
}
