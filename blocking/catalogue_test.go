package blocking

import (
	"slices"
	"testing"
)

// TestEveryStageIsOrdered: every code's stage is in the stage order, so
// `oa explain` lists each stage's codes together and in pipeline order
// (a stage left out would fall to the end, after the coordinator); and
// All lists the stages in that order.
func TestEveryStageIsOrdered(t *testing.T) {
	all := All()
	for _, e := range all {
		if !slices.Contains(stages, e.Stage) {
			t.Errorf("%s: stage %q is not in the stage order", e.Code, e.Stage)
		}
	}
	for i := 1; i < len(all); i++ {
		if stageOrder(all[i-1].Stage) > stageOrder(all[i].Stage) {
			t.Fatalf("All lists %s (%s) before %s (%s)", all[i-1].Code, all[i-1].Stage, all[i].Code, all[i].Stage)
		}
	}
	if !slices.Contains(stages, StageFleet) {
		t.Fatal("the fleet stage is not ordered")
	}
}
