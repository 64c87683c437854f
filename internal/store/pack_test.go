package store

import (
	"bytes"
	"compress/flate"
	"testing"
)

// testPacking is a packing of the tests' own (the history's dictionary is
// the ledger's, tested there: ledger/pack_test.go).
var testPacking = NewPacking(0x01, `{"run_id":"","state":"terminal"}`)

// A packed row that would unpack beyond maxPacked is left as it is.
func TestUnpackIsBounded(t *testing.T) {
	var b bytes.Buffer
	b.WriteByte(0x01)
	w, err := flate.NewWriterDict(&b, flate.BestCompression, testPacking.dict)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(make([]byte, maxPacked+1))
	w.Close()
	if got := testPacking.Unpack(b.Bytes()); !bytes.Equal(got, b.Bytes()) {
		t.Fatalf("a row unpacking past the bound gave %d bytes", len(got))
	}
	big := bytes.Repeat([]byte("a"), maxPacked+1)
	if got := testPacking.Pack(big); !bytes.Equal(got, big) {
		t.Fatal("a document past the bound was packed")
	}
}

// TestHistoryPackingIsTheOwners: Pack and Unpack are the packing the
// owner set, and without one a row is stored and read as it is (a packed
// row is then not believed: it fails the checks of what it claims to be).
func TestHistoryPackingIsTheOwners(t *testing.T) {
	defer PackHistoryWith(history.Load())
	doc := []byte(`{"run_id":"run_1","state":"terminal","run_id_again":"run_1"}`)
	packed := testPacking.Pack(doc)
	if packed[0] != 0x01 || string(testPacking.Unpack(packed)) != string(doc) {
		t.Fatalf("the test packing does not round trip: % x", packed)
	}
	PackHistoryWith(nil)
	if got := Pack(doc); !bytes.Equal(got, doc) {
		t.Fatalf("with no packing set, Pack = % x", got)
	}
	if got := Unpack(packed); !bytes.Equal(got, packed) {
		t.Fatalf("with no packing set, a packed row unpacked to %q", got)
	}
	PackHistoryWith(testPacking)
	if got := Pack(doc); !bytes.Equal(got, packed) {
		t.Fatalf("Pack is not the packing set: % x", got)
	}
	if got := Unpack(packed); !bytes.Equal(got, doc) {
		t.Fatalf("Unpack is not the packing set: %q", got)
	}
}
