package resolve

// NewRegistryForTest indexes and digests r as LoadRegistry does a file, for
// tests and benchmarks that build a registry in memory.
func NewRegistryForTest(r Registry) (*Registry, error) {
	if err := r.finish(func(...string) string { return "" }); err != nil {
		return nil, err
	}
	return &r, nil
}
