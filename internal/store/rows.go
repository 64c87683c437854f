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
	// State is the run's state document, unpacked (see Pack).
	State []byte
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
	// Record is the signed record, unpacked (see Pack): byte for byte
	// what was signed.
	Record    []byte
	Signature []byte
}

// Row is what a scan reads one row from: *sql.Rows or *sql.Row.
type Row interface{ Scan(...any) error }

// The columns of each row type, in the order its scan reads them: the
// owner's typed store and Dump select the same columns and read them
// with the same function.
const (
	AdmissionColumns  = `seq, package, artifact_digest, record, signature`
	RevocationColumns = `seq, artifact_digest, record, signature`
	RunColumns        = `run_id, deployment, request_id, state`
	ReceiptColumns    = `seq, run_id, attempt, prev_digest, record, signature`
)

// ScanAdmission scans one row of AdmissionColumns.
func ScanAdmission(r Row, a *Admission) error {
	return r.Scan(&a.Seq, &a.Package, &a.ArtifactDigest, &a.Record, &a.Signature)
}

// ScanRevocation scans one row of RevocationColumns.
func ScanRevocation(r Row, v *Revocation) error {
	return r.Scan(&v.Seq, &v.ArtifactDigest, &v.Record, &v.Signature)
}

// ScanRun scans one row of RunColumns.
func ScanRun(r Row, v *Run) error {
	if err := r.Scan(&v.RunID, &v.Deployment, &v.RequestID, &v.State); err != nil {
		return err
	}
	v.State = Unpack(v.State)
	return nil
}

// ScanReceipt scans one row of ReceiptColumns.
func ScanReceipt(r Row, v *Receipt) error {
	if err := r.Scan(&v.Seq, &v.RunID, &v.Attempt, &v.PrevDigest, &v.Record, &v.Signature); err != nil {
		return err
	}
	v.Record = Unpack(v.Record)
	return nil
}
