package coordinator

import (
	"fmt"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/ledger"
	"os"
	"sort"
	"sync"
	"time"
)

var phaseMu sync.Mutex
var phaseSum = map[string]time.Duration{}
var phaseN = map[string]int{}

func phase(name string) func() {
	t := time.Now()
	return func() {
		d := time.Since(t)
		phaseMu.Lock()
		phaseSum[name] += d
		phaseN[name]++
		phaseMu.Unlock()
	}
}

func PhaseReport() {
	ledger.PhaseReport()
	connector.PhaseReport()
	phaseMu.Lock()
	defer phaseMu.Unlock()
	var names []string
	for n := range phaseSum {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(os.Stderr, "%-28s n=%6d avg=%8.3f ms\n", n, phaseN[n], float64(phaseSum[n].Microseconds())/1000/float64(phaseN[n]))
	}
	phaseSum = map[string]time.Duration{}
	phaseN = map[string]int{}
}
