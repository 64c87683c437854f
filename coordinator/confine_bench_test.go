package coordinator_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/oa-dev/oa/connector/confine"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/cputime"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// BenchmarkSessionStartConfinement: a coordinator session start
// (coordinator.Open: binding verified, plan recomputed, the records
// connection's server started and its tool list checked, then Close) for
// a deployment whose server is the test server, confined by its default
// profile (plus its tools folder) and unconfined. The difference is the
// launcher step: oa re-executed, Landlock and rlimits applied, the server
// executed (docs/PERFORMANCE.md, "Confinement (issue 23)").
func BenchmarkSessionStartConfinement(b *testing.B) {
	for _, mode := range []string{"confined", "unconfined"} {
		b.Run(mode, func(b *testing.B) {
			cfg := subprocessRecords(b)
			if mode == "unconfined" {
				cfg.Confinement = &confine.Profile{Unconfined: true}
			}
			h := hosttest.New(b, nil)
			h.WriteRegistry(resolve.StarterRegistry(hosttest.Name))
			host := h.Open()
			h.AddConnection(host, "records", resolve.SandboxConnector, cfg)
			h.Bind(host, "claude-test")
			host.Close()
			before := cputime.Reaped()
			for b.Loop() {
				c, err := coordinator.Open(context.Background(), coordinator.Options{Home: h.Home, Deployment: "clinic", EffectTimeout: 30 * time.Second, Operator: io.Discard})
				if err != nil {
					b.Fatal(err)
				}
				if err := c.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(cputime.PerOp(cputime.Reaped()-before, b.N), "child-cpu-ms/op")
		})
	}
}
