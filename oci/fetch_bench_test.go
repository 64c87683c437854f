package oci

import (
	"context"
	"net/http"
	"testing"
	"time"

	"oras.land/oras-go/v2/registry/remote/credentials"

	"github.com/oa-dev/oa/examples"
	"github.com/oa-dev/oa/schemas"
	"github.com/oa-dev/oa/testkit/exampletest"
	"github.com/oa-dev/oa/testkit/registrytest"
)

// BenchmarkFetchRegistry reads and verifies the example artifact from
// the in-process registry (Fetch: manifest, IR, then the other layers),
// with no added latency and with 5 ms added to every request, as a
// registry across a network adds it.
func BenchmarkFetchRegistry(b *testing.B) {
	ctx := context.Background()
	reg := registrytest.Start(b)
	target, err := Open(ctx, Ref{Registry: reg.Host(), Repository: "oa/bench"}, OpenOptions{PlainHTTP: true, Credentials: credentials.NewMemoryStore()})
	if err != nil {
		b.Fatal(err)
	}
	res := exampletest.Compile(b, examples.Default)
	desc, err := Push(ctx, target, res.Worker, res.IR, "v1", PackOptions{})
	if err != nil {
		b.Fatal(err)
	}
	for _, delay := range []time.Duration{0, 5 * time.Millisecond} {
		b.Run(delay.String(), func(b *testing.B) {
			reg.Lie(func(http.ResponseWriter, *http.Request) bool {
				time.Sleep(delay)
				return false
			})
			defer reg.Lie(nil)
			for b.Loop() {
				if _, err := Fetch(ctx, target, desc, schemas.CheckFetchedIR); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
