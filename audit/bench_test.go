package audit

import (
	"context"
	"os"
	"testing"
	"time"
)

// BenchmarkAuditExport and BenchmarkAuditVerify: the clinic fixture (four
// receipts, three runs) exported, and its bundle verified offline.
func BenchmarkAuditExport(b *testing.B) {
	f := newFixture(b)
	b.ReportAllocs()
	for b.Loop() {
		out, err := os.Create(f.bundle)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Export(context.Background(), ExportOptions{Home: f.Home, Now: time.Now()}, out); err != nil {
			b.Fatal(err)
		}
		out.Close()
	}
}

func BenchmarkAuditVerify(b *testing.B) {
	f := newFixture(b)
	b.ReportAllocs()
	for b.Loop() {
		r, err := Verify(context.Background(), f.bundle, f.keys)
		if err != nil || !r.OK {
			b.Fatalf("%+v, %v", r, err)
		}
	}
}
