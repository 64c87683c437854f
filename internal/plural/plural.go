// Package plural writes a count with its noun the way a person reads it:
// singular for one. The CLI's output and the console's pages share it, so
// neither says "1 receipts".
package plural

import "strconv"

// Count is n and the noun, singular for one: "1 receipt", "2 receipts",
// "0 receipts".
func Count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
