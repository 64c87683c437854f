package plural_test

import (
	"fmt"

	"github.com/oa-dev/oa/internal/plural"
)

func ExampleCount() {
	fmt.Println(plural.Count(1, "run", "runs"))
	fmt.Println(plural.Count(3, "run", "runs"))
	// Output:
	// 1 run
	// 3 runs
}
