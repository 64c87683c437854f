package audit

import (
	"fmt"
	"strconv"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/oci"
)

// Default limits of oa audit verify. A bundle holds one release (its
// Worker IR, components and cosign manifests), about twenty documents and
// the tar's folders, so 4096 entries is far past any export; documents
// grow with the host's history (receipts.json holds every receipt), so
// one may reach 512 MiB and the bundle 4 GiB, more than the 4 MiB an
// artifact's signature layer may be. Manifests and index.json are a few
// KiB when oa writes them; a bundle's manifests are the release's, so
// they are held to the same default as a registry's (oci).
const (
	DefaultEntries       = 4096
	DefaultDocumentBytes = 512 << 20
	DefaultManifestBytes = oci.DefaultManifestBytes
	DefaultBundleBytes   = 4 << 30
)

// Limits bound what oa audit verify reads from a bundle before it believes
// it: every tar entry's header is checked against them before its bytes
// are read, and every blob's descriptor before the blob is. A zero field
// takes its default.
type Limits struct {
	// Entries bounds the tar's entries (files and folders).
	Entries int
	// DocumentBytes bounds each tar entry and each document layer.
	DocumentBytes int64
	// ManifestBytes bounds index.json and each manifest.
	ManifestBytes int64
	// BundleBytes bounds the sum of the tar's entries.
	BundleBytes int64
}

// DefaultLimits are the limits oa audit verify uses unless told others.
func DefaultLimits() Limits {
	return Limits{Entries: DefaultEntries, DocumentBytes: DefaultDocumentBytes, ManifestBytes: DefaultManifestBytes, BundleBytes: DefaultBundleBytes}
}

// WithDefaults returns l with every zero (or negative) field set to its
// default.
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits()
	if l.Entries <= 0 {
		l.Entries = d.Entries
	}
	if l.DocumentBytes <= 0 {
		l.DocumentBytes = d.DocumentBytes
	}
	if l.ManifestBytes <= 0 {
		l.ManifestBytes = d.ManifestBytes
	}
	if l.BundleBytes <= 0 {
		l.BundleBytes = d.BundleBytes
	}
	return l
}

// Flags of oa audit verify that raise each limit, named in refusals.
const (
	FlagMaxEntries       = "max-entries"
	FlagMaxDocumentBytes = "max-document-bytes"
	FlagMaxManifestBytes = "max-manifest-bytes"
	FlagMaxBundleBytes   = "max-bundle-bytes"
)

// tooLarge is the refusal for what (an entry or a document, named)
// claiming size bytes over limit; flag is the option that raises it.
func tooLarge(what string, size, limit int64, flag string) error {
	return overLimit(fmt.Sprintf("%s claims %d bytes, over the audit limit of %d", what, size, limit), flag)
}

// overLimit is the audit_bundle_too_large refusal for problem; flag is
// the option that raises the limit.
func overLimit(problem, flag string) error {
	return blocking.New(blocking.AuditBundleTooLarge, "%s; pass --%s to oa audit verify if the bundle is genuine", problem, flag)
}

// maxNameShown bounds how much of a tar entry's name a refusal repeats.
const maxNameShown = 96

// entryName names the tar entry name for a refusal: quoted (so control
// characters are shown, not obeyed) and cut to maxNameShown bytes.
func entryName(name string) string {
	if len(name) > maxNameShown {
		name = name[:maxNameShown] + "…"
	}
	return "tar entry " + strconv.Quote(name)
}
