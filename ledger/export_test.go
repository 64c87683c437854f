package ledger

// SetMaxIncremental sets how far behind the head a mark may be for an
// incremental verify, for a test; restore sets it back.
func SetMaxIncremental(n int64) (restore func()) {
	was := maxIncremental
	maxIncremental = n
	return func() { maxIncremental = was }
}
