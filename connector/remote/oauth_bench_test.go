package remote

import (
	"context"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/oa-dev/oa/internal/tokenstore"
)

// BenchmarkOAuthToken: what OAuth adds on oa's side to a remote request:
// "memory" is every request of a session after its first (the access
// token held in memory and checked for expiry); "store" is a session's
// first request (the connection's file lock taken, the sealed file read
// and opened with AES-256-GCM, the grant decoded). Neither sends anything:
// a refresh is one token request to the authorization server on top.
func BenchmarkOAuthToken(b *testing.B) {
	const url = "https://mcp.example.com/mcp"
	store := tokenstore.For(b.TempDir(), "crm")
	g := &storedGrant{Resource: url, Grant: GrantAuthorizationCode, TokenURL: "https://auth.example.com/token", ClientID: "oa-cli",
		Token: &oauth2.Token{AccessToken: "at-0123456789abcdef0123456789abcdef", RefreshToken: "rt-0123456789abcdef", TokenType: "Bearer", Expiry: time.Now().Add(time.Hour)}}
	if err := saveGrant(store, g); err != nil {
		b.Fatal(err)
	}
	src := &oauthSource{remote: Config{URL: url, OAuth: &OAuth{Grant: GrantAuthorizationCode}}, store: store}
	ctx := context.Background()
	b.Run("memory", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := src.token(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("store", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			src.cur = nil
			if _, err := src.token(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}
