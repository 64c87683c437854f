package oci

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/examples"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/testkit/exampletest"
)

// countingTarget counts the blobs read through it.
type countingTarget struct {
	oras.ReadOnlyTarget
	reads int
}

func (c *countingTarget) Fetch(ctx context.Context, desc ocispec.Descriptor) (io.ReadCloser, error) {
	c.reads++
	return c.ReadOnlyTarget.Fetch(ctx, desc)
}

// pushedDefault pushes the default example to a new layout.
func pushedDefault(t *testing.T) (oras.ReadOnlyTarget, ocispec.Descriptor, []byte) {
	t.Helper()
	res := exampletest.Compile(t, examples.Default)
	store, _ := newLayout(t)
	desc, err := Push(context.Background(), store, res.Worker, res.IR, "v1", PackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return store, desc, res.IR
}

// fetchers are the two ways to read a release: each must hold the IR to
// the schema check it is given.
var fetchers = map[string]func(context.Context, oras.ReadOnlyTarget, ocispec.Descriptor, SchemaCheck) (*Artifact, error){
	"Fetch":      Fetch,
	"FetchBound": FetchBound,
}

// TestFetchWithoutSchemaCheckReadsNothing: the schema check is not
// optional. A caller that passes none is refused before a byte is read,
// so no release can be read with its IR unchecked (issue 42 moved the
// check out of oci, not off the read).
func TestFetchWithoutSchemaCheckReadsNothing(t *testing.T) {
	store, desc, _ := pushedDefault(t)
	for name, fetch := range fetchers {
		counted := &countingTarget{ReadOnlyTarget: store}
		art, err := fetch(context.Background(), counted, desc, nil)
		if !errors.Is(err, errNoSchemaCheck) || art != nil {
			t.Errorf("%s without a check = %v, %v; want errNoSchemaCheck", name, art, err)
		}
		if counted.reads != 0 {
			t.Errorf("%s without a check read %d blobs", name, counted.reads)
		}
	}
}

// TestFetchHoldsTheIRToItsCheck: the check sees the IR layer's bytes,
// its refusal is the fetch's, and a check that neither refuses nor
// returns an IR is a fault, not an accepted release.
func TestFetchHoldsTheIRToItsCheck(t *testing.T) {
	store, desc, irBytes := pushedDefault(t)
	refusing := func(b []byte) (*ir.Worker, error) {
		if !bytes.Equal(b, irBytes) {
			t.Errorf("the check saw %d bytes, not the IR layer", len(b))
		}
		return nil, blocking.New(blocking.IRSchemaViolation, "refused by the test's check")
	}
	silent := func([]byte) (*ir.Worker, error) { return nil, nil }
	for name, fetch := range fetchers {
		_, err := fetch(context.Background(), store, desc, refusing)
		wantCode(t, err, blocking.IRSchemaViolation)
		art, err := fetch(context.Background(), store, desc, silent)
		if err == nil || art != nil || len(blocking.Refusals(err)) != 0 {
			t.Errorf("%s with a check returning nothing = %v, %v; want a fault", name, art, err)
		}
	}
}
