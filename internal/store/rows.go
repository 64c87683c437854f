package store

// The row types below are the rows of the tables the stages own, as an
// audit bundle carries them (see Dump): the owners' typed stores read and
// write them, and a bundle copies them byte for byte.

// Admission is one stored admission record (admit's admissions table).
type Admission struct {
	// Seq is the record's sequence number among the admissions of Package,
	// starting at 1.
	Seq int64
	// Package is the package name the admission belongs to.
	Package string
	// ArtifactDigest is the digest of the admitted artifact.
	ArtifactDigest string
	// Record is the signed record, byte for byte as it was inserted.
	Record []byte
	// Signature is the signature over Record, byte for byte as it was
	// inserted.
	Signature []byte
}

// Revocation is one stored revocation record (admit's revocations table).
type Revocation struct {
	// ArtifactDigest is the digest of the revoked artifact.
	ArtifactDigest string
	// Record is the signed record, byte for byte as it was inserted.
	Record []byte
	// Signature is the signature over Record, byte for byte as it was
	// inserted.
	Signature []byte
	// Seq is assigned by the store: it increases with every revocation
	// inserted, whatever its digest, and is never reused.
	Seq int64
}

// Run is one stored run of the coordinator: its keys and its state
// document.
type Run struct {
	RunID      string
	Deployment string
	RequestID  string
	State      []byte
}

// Attention is one stored attention item of the coordinator.
type Attention struct {
	ID    string
	RunID string
	State []byte
}

// Receipt is one stored receipt of the coordinator's chain.
type Receipt struct {
	Seq        int64
	RunID      string
	Attempt    int
	PrevDigest string
	Record     []byte
	Signature  []byte
}

// RunColumns are the columns of a Run, in its fields' order.
const RunColumns = `run_id, deployment, request_id, state`

// ScanRun scans one row of RunColumns.
func ScanRun(r interface{ Scan(...any) error }, v *Run) error {
	return r.Scan(&v.RunID, &v.Deployment, &v.RequestID, &v.State)
}
