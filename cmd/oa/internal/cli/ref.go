package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/schemas"
)

// Home is $OA_HOME, by default ~/.oa: host state and the default OCI
// layouts live there.
func Home() string {
	if h := os.Getenv("OA_HOME"); h != "" {
		return h
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".oa")
	}
	return ".oa"
}

// RefFlags are the flags every command that takes a reference has.
type RefFlags struct {
	Layout   bool
	Registry RegistryFlags
	// Opened is the host the command opened before reading the release,
	// if it did: its policy's limits apply without loading the policy
	// file a second time.
	Opened *host.Host
}

// Register adds --oci-layout and the registry flags to cmd.
func (f *RefFlags) Register(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.Layout, "oci-layout", false, "the reference is an OCI image layout PATH[:TAG][@DIGEST]")
	f.Registry.Register(cmd, "", "the registry")
}

// Open parses s and opens its target for reading.
func (f *RefFlags) Open(ctx context.Context, s string) (oci.Ref, oci.Target, error) {
	return f.openTarget(ctx, s, false)
}

// OpenForWrite parses s and opens its target, creating a missing layout.
func (f *RefFlags) OpenForWrite(ctx context.Context, s string) (oci.Ref, oci.Target, error) {
	return f.openTarget(ctx, s, true)
}

func (f *RefFlags) openTarget(ctx context.Context, s string, create bool) (oci.Ref, oci.Target, error) {
	ref, opts, err := f.parse(s, create)
	if err != nil {
		return oci.Ref{}, nil, err
	}
	target, err := oci.Open(ctx, ref, opts)
	return ref, target, err
}

// parse parses s and says the options its target is opened with (the
// host's limits over the registry flags).
func (f *RefFlags) parse(s string, create bool) (oci.Ref, oci.OpenOptions, error) {
	ref, err := oci.ParseRef(s, oci.RefOptions{Home: Home(), Layout: f.Layout})
	if err != nil {
		return oci.Ref{}, oci.OpenOptions{}, err
	}
	if ref.Layout != "" && !ref.LayoutPath {
		// A layout under $OA_HOME/oci: a home that is a file is its own
		// refusal, not a failure to make a folder.
		if err := host.CheckHome(Home()); err != nil {
			return oci.Ref{}, oci.OpenOptions{}, err
		}
	}
	opts, err := f.releaseOptions(create)
	return ref, opts, err
}

// openOptions are the registry flags' options, creating a missing layout
// when create is set.
func (f *RefFlags) openOptions(create bool) oci.OpenOptions {
	o := f.Registry.Options()
	o.Create = create
	return o
}

// releaseOptions are the registry flags' options under this host's
// limits (host.Policy.ReleaseOptions, the one place every stage takes
// them from), or the defaults when there is no host: those of the host
// the command opened, else read from $OA_HOME.
func (f *RefFlags) releaseOptions(create bool) (oci.OpenOptions, error) {
	if f.Opened != nil {
		return f.Opened.Policy.ReleaseOptions(f.openOptions(create)), nil
	}
	return host.ReleaseOptions(Home(), f.openOptions(create))
}

// Resolve opens the pinned release s for reading: one value (the
// reference, where it is read from and its manifest) that the command
// passes down. A reference without a digest is refused with the digest its
// tag resolves to. A digest reference costs one manifest request (no
// separate HEAD), and what was read is remembered for the reads that
// follow.
func (f *RefFlags) Resolve(ctx context.Context, s string) (*oci.Release, error) {
	ref, opts, err := f.parse(s, false)
	if err != nil {
		return nil, err
	}
	return oci.OpenPinned(ctx, ref, opts)
}

// Pinned is a pinned release opened for commands that write beside it
// (signatures, attestations) or copy it: the release, the same target
// writable, and the release's verified artifact.
type Pinned struct {
	// Release is the release as read.
	Release *oci.Release
	// Writable is the release's target, for writing signatures and
	// attestations beside it.
	Writable oci.Target
	// Artifact is the release's artifact, fetched and verified.
	Artifact *oci.Artifact
}

// OpenPinned opens s, resolves it to a manifest descriptor (refusing a
// reference without a digest with the digest its tag resolves to) and
// fetches and verifies the artifact.
func (f *RefFlags) OpenPinned(ctx context.Context, s string) (*Pinned, error) {
	ref, target, err := f.Open(ctx, s)
	if err != nil {
		return nil, err
	}
	desc, err := oci.Resolve(ctx, target, ref.Reference())
	if err != nil {
		return nil, err
	}
	if err := ref.RequireDigest(desc.Digest); err != nil {
		return nil, err
	}
	art, err := oci.Fetch(ctx, target, desc, schemas.CheckFetchedIR)
	if err != nil {
		return nil, err
	}
	return &Pinned{Release: &oci.Release{Ref: ref, Target: target, Descriptor: desc}, Writable: target, Artifact: art}, nil
}

// Progress writes a line per step to the command's stderr when that is a
// terminal and --json was not given, so long transfers show life without
// cluttering logs, pipes and JSON consumers.
type Progress struct{ w io.Writer }

// isTerminal reports whether w is a terminal (a variable for tests).
var isTerminal = func(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// NewProgress is progress on cmd's stderr, or nowhere when that is not a
// terminal or the command prints JSON.
func NewProgress(cmd *cobra.Command) Progress {
	if w := cmd.ErrOrStderr(); !WantJSON(cmd) && isTerminal(w) {
		return Progress{w}
	}
	return Progress{io.Discard}
}

// Step writes one line.
func (p Progress) Step(format string, args ...any) { fmt.Fprintf(p.w, format+"\n", args...) }
