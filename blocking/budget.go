package blocking

// Codes of the compile budget and the publish-time size check (issue 22,
// D8 and D15).
const (
	CompileTimeExceeded   Code = "compile_time_exceeded"
	CompileMemoryExceeded Code = "compile_memory_exceeded"
	BundleTooManyEntries  Code = "bundle_too_many_entries"
	IRTooLargeForHosts    Code = "ir_too_large_for_hosts"
	// CustomerStateNationalID is a customer-state shape (with the others
	// in compile.go), added with the NFKC scan of issue 22 D15.
	CustomerStateNationalID Code = "customer_state_national_id"
)

func init() {
	register(
		Entry{CustomerStateNationalID, StageCompile, "value has the shape of a national identity number",
			"Remove the number (a US social security number's shape: three, two and four digits). A package carries method and limits, never customer state: move the value to the host (a connection, a secret file or a run input) and refer to it by capability or input name."},
		Entry{CompileTimeExceeded, StageCompile, "compiling the bundle took longer than its time budget",
			"A bundle's CUE evaluated for longer than `oa compile` allows (default 60s): look for a comprehension over a large list or a long chain of fields. If the bundle really needs longer, raise the budget with --timeout."},
		Entry{CompileMemoryExceeded, StageCompile, "compiling the bundle needed more memory than its budget",
			"A bundle's CUE needed more memory than `oa compile` allows (default 1 GiB): look for a string or list that is doubled or repeated, or a comprehension that builds a large list. If the bundle really needs more, raise the budget with --max-memory-bytes."},
		Entry{BundleTooManyEntries, StageCompile, "bundle defines more jobs, steps, capabilities or evaluators than a package may hold",
			"A package holds at most 256 jobs, 256 capabilities, 1024 evaluators and 128 steps per job; the field named is over its limit. Split the package, or generate fewer entries."},
		Entry{IRTooLargeForHosts, StageCompile, "the compiled IR is larger than hosts accept by default",
			"Hosts refuse an IR layer over their policy's limits.ir_bytes (default 4 MiB) with layer_too_large. Make the package smaller (skill docs and long prose are the usual bulk), or, if every host it goes to raised ir_bytes, pass --max-ir-bytes with that limit."},
	)
}
