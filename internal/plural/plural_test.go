package plural

import "testing"

func TestCount(t *testing.T) {
	for n, want := range map[int]string{0: "0 receipts", 1: "1 receipt", 2: "2 receipts", 231: "231 receipts", -1: "-1 receipts"} {
		if got := Count(n, "receipt", "receipts"); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
}
