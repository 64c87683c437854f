package cputime

import (
	"os/exec"
	"testing"
)

// TestChildrenCountsAWorkingChild: a child that spins shows in Reaped
// once it is waited for, and Self grows with this process's own work.
func TestChildrenCountsAWorkingChild(t *testing.T) {
	before, self := Reaped(), Self()
	if err := exec.Command("sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done").Run(); err != nil {
		t.Fatal(err)
	}
	if Reaped() <= before {
		t.Fatalf("reaped child CPU did not grow: %v → %v", before, Reaped())
	}
	x := 0
	for i := range 50_000_000 {
		x += i
	}
	if Self() <= self || x == 0 {
		t.Fatalf("own CPU did not grow: %v → %v", self, Self())
	}
}
