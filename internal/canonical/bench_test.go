package canonical

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
)

// IR-like benchmark data: a plan of workers, each an object of about twenty
// members (in struct order, which is not sorted), with nested arrays and
// objects, mostly small integers and short strings, some non-ASCII.

type benchPort struct {
	Name     string `json:"name"`
	Protocol string `json:"protocol"`
	Port     int    `json:"port"`
}

type benchStep struct {
	Op      string         `json:"op"`
	Target  string         `json:"target"`
	Args    []int          `json:"args"`
	Retries int            `json:"retries"`
	Params  map[string]int `json:"params"`
}

type benchWorker struct {
	Kind        string            `json:"kind"`
	ID          string            `json:"id"`
	Name        string            `json:"name"`
	Version     int               `json:"version"`
	Image       string            `json:"image"`
	Command     []string          `json:"command"`
	Env         map[string]string `json:"env"`
	Replicas    int               `json:"replicas"`
	CPU         int               `json:"cpu_millis"`
	Memory      int               `json:"memory_mib"`
	Ports       []benchPort       `json:"ports"`
	Deps        []string          `json:"deps"`
	Steps       []benchStep       `json:"steps"`
	Enabled     bool              `json:"enabled"`
	Priority    int               `json:"priority"`
	Owner       string            `json:"owner"`
	Description string            `json:"description"`
	Checksum    string            `json:"checksum"`
	Created     int64             `json:"created_unix"`
	Parent      *string           `json:"parent"`
}

type benchPlan struct {
	Schema  string        `json:"schema"`
	Name    string        `json:"name"`
	Workers []benchWorker `json:"workers"`
}

var words = []string{"alpha", "beta", "gamma", "delta", "queue", "ingest", "résumé", "naïve", "über", "日本語", "données", "Straße", "emoji😀", "x"}

func makeBenchPlan(size int) *benchPlan {
	r := rand.New(rand.NewPCG(42, 1))
	w := func() string { return words[r.IntN(len(words))] }
	plan := &benchPlan{Schema: "oa.dev/ir/v1", Name: "bench-plan"}
	total := 0
	for i := 0; total < size; i++ {
		wk := benchWorker{
			Kind:        "Worker",
			ID:          fmt.Sprintf("wk-%06d", i),
			Name:        w() + "-" + w(),
			Version:     r.IntN(20),
			Image:       "registry.example/oa/" + w() + ":1." + fmt.Sprint(r.IntN(10)),
			Command:     []string{"/bin/" + w(), "--mode=" + w(), "--n", fmt.Sprint(r.IntN(100))},
			Env:         map[string]string{"LANG": "C.UTF-8", "ROLE": w(), "ZONE": w(), "A_LEVEL": fmt.Sprint(r.IntN(5))},
			Replicas:    1 + r.IntN(8),
			CPU:         250 * (1 + r.IntN(8)),
			Memory:      128 << r.IntN(5),
			Ports:       []benchPort{{"http", "tcp", 8000 + r.IntN(1000)}, {"metrics", "tcp", 9090}},
			Deps:        []string{fmt.Sprintf("wk-%06d", r.IntN(i+1)), fmt.Sprintf("wk-%06d", r.IntN(i+1))},
			Enabled:     r.IntN(4) != 0,
			Priority:    r.IntN(100) - 50,
			Owner:       w() + "@example.org",
			Description: "Worker " + w() + " handles " + w() + " for " + w() + " — “quoted” text",
			Checksum:    fmt.Sprintf("sha256:%016x%016x", r.Uint64(), r.Uint64()),
			Created:     1700000000 + r.Int64N(1e7),
		}
		for j := 0; j < 3; j++ {
			wk.Steps = append(wk.Steps, benchStep{
				Op:      w(),
				Target:  w() + "/" + w(),
				Args:    []int{r.IntN(10), r.IntN(1000), r.IntN(100000), -r.IntN(10)},
				Retries: r.IntN(3),
				Params:  map[string]int{"timeout": r.IntN(60), "backoff": r.IntN(10), "limit": r.IntN(1000)},
			})
		}
		if i%3 == 0 {
			p := fmt.Sprintf("wk-%06d", i/3)
			wk.Parent = &p
		}
		b, _ := json.Marshal(wk)
		total += len(b) + 1
		plan.Workers = append(plan.Workers, wk)
	}
	return plan
}

var benchData = sync.OnceValues(func() (*benchPlan, []byte) {
	plan := makeBenchPlan(1 << 20)
	b, err := json.Marshal(plan)
	if err != nil {
		panic(err)
	}
	return plan, b
})

func BenchmarkTransform1MiB(b *testing.B) {
	_, in := benchData()
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Transform(in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTransformIndented1MiB(b *testing.B) {
	plan, _ := benchData()
	in, err := json.MarshalIndent(plan, "", "  ")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Transform(in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMarshal1MiB(b *testing.B) {
	plan, in := benchData()
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Marshal(plan); err != nil {
			b.Fatal(err)
		}
	}
}

func TestBenchDocument(t *testing.T) {
	plan, in := benchData()
	if len(in) < 1<<20 || len(in) > 1<<20+8<<10 {
		t.Errorf("benchmark document is %d bytes, want about 1 MiB", len(in))
	}
	out, err := Transform(in)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	if string(m) != string(out) {
		t.Error("Marshal and Transform of the benchmark document differ")
	}
	if ref := refCanonical(mustUnmarshal(t, in)); ref != string(out) {
		t.Error("Transform of the benchmark document differs from the reference")
	}
}

func mustUnmarshal(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}
