package audit

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"syscall"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oa-dev/oa/blocking"
)

// unpackBundle unpacks the tar at file into the empty folder dir, holding
// every entry to lim before a byte of it is read: at most lim.Entries
// entries, each at most lim.DocumentBytes (index.json lim.ManifestBytes),
// lim.BundleBytes in all. Only what an OCI image layout holds is
// accepted (oci-layout, index.json, blobs/ALG/HEX and their folders), as
// regular files and folders: a link, device or FIFO, a name that is
// absolute, climbs out with "..", or is repeated is refused, naming the
// entry. Files are created inside dir only (os.Root) and never replace
// one another, so nothing is written outside dir whatever the tar says.
func unpackBundle(file, dir string, lim Limits) error {
	lim = lim.WithDefaults()
	f, err := openRegularFile(file)
	if err != nil {
		return err
	}
	defer f.Close()
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("opening the bundle's scratch folder: %w", err)
	}
	defer root.Close()
	tr := tar.NewReader(f)
	seen := map[string]bool{}
	buf := make([]byte, 64<<10)
	var total int64
	for n := 0; ; n++ {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return invalidf("the file is not a tar of an OCI image layout (entry %d cannot be read)", n+1)
		}
		if n >= lim.Entries {
			return overLimit(fmt.Sprintf("the tar has more than %d entries, the audit limit", lim.Entries), FlagMaxEntries)
		}
		name, err := checkEntry(hdr, lim, seen)
		if err != nil {
			return err
		}
		if total += hdr.Size; total > lim.BundleBytes {
			return overLimit(fmt.Sprintf("the tar's entries add up to more than %d bytes, the audit limit, at %s", lim.BundleBytes, entryName(hdr.Name)), FlagMaxBundleBytes)
		}
		if err := writeEntry(root, tr, hdr, name, buf); err != nil {
			return err
		}
	}
	return nil
}

// openRegularFile opens file, refusing anything but a regular file (a
// FIFO would block, a device read forever).
func openRegularFile(file string) (*os.File, error) {
	notFile := invalidf("the bundle is not a readable regular file")
	f, err := os.OpenFile(file, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, notFile
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, notFile
	}
	return f, nil
}

// checkEntry checks hdr's type, name and size against lim and the names
// seen so far, and returns its name within the layout.
func checkEntry(hdr *tar.Header, lim Limits, seen map[string]bool) (string, error) {
	name := strings.TrimPrefix(hdr.Name, "./")
	isDir := hdr.Typeflag == tar.TypeDir
	if isDir {
		name = strings.TrimSuffix(name, "/")
	}
	switch {
	case hdr.Typeflag != tar.TypeReg && !isDir:
		return "", invalidf("%s is a %s, not a regular file or folder; an OCI layout holds none", entryName(hdr.Name), typeName(hdr.Typeflag))
	case !layoutName(name, isDir):
		return "", invalidf("%s is not a name an OCI image layout holds (oci-layout, index.json, blobs/ALGORITHM/DIGEST)", entryName(hdr.Name))
	case seen[name]:
		return "", invalidf("%s appears twice", entryName(hdr.Name))
	case hdr.Size < 0:
		return "", invalidf("%s has a negative size", entryName(hdr.Name))
	}
	seen[name] = true
	limit, flag := lim.DocumentBytes, FlagMaxDocumentBytes
	if name == ocispec.ImageIndexFile || name == ocispec.ImageLayoutFile {
		limit, flag = lim.ManifestBytes, FlagMaxManifestBytes
	}
	if hdr.Size > limit {
		return "", tooLarge(entryName(hdr.Name), hdr.Size, limit, flag)
	}
	return name, nil
}

// layoutName reports whether name (cleaned of "./" and a folder's "/") is
// a file or folder of an OCI image layout.
func layoutName(name string, isDir bool) bool {
	if name == "" || path.Clean(name) != name || path.IsAbs(name) || strings.HasPrefix(name, "..") {
		return false
	}
	parts := strings.Split(name, "/")
	switch {
	case isDir:
		return parts[0] == ocispec.ImageBlobsDir && len(parts) <= 2 && (len(parts) == 1 || digest.Algorithm(parts[1]).Available())
	case len(parts) == 1:
		return name == ocispec.ImageLayoutFile || name == ocispec.ImageIndexFile
	case len(parts) == 3 && parts[0] == ocispec.ImageBlobsDir:
		return digest.NewDigestFromEncoded(digest.Algorithm(parts[1]), parts[2]).Validate() == nil
	}
	return false
}

// typeName names a tar entry type for a refusal.
func typeName(t byte) string {
	switch t {
	case tar.TypeSymlink:
		return "symbolic link"
	case tar.TypeLink:
		return "hard link"
	case tar.TypeChar, tar.TypeBlock:
		return "device"
	case tar.TypeFifo:
		return "FIFO"
	}
	return "special entry"
}

// writeEntry writes the entry hdr (checked, named name) from tr inside
// root, copying through buf: a folder made, or a new file of exactly
// hdr.Size bytes.
func writeEntry(root *os.Root, tr *tar.Reader, hdr *tar.Header, name string, buf []byte) error {
	if hdr.Typeflag == tar.TypeDir {
		if err := root.Mkdir(name, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("unpacking the bundle: %w", err)
		}
		return nil
	}
	if dir := path.Dir(name); dir != "." {
		if err := mkdirAllIn(root, dir); err != nil {
			return err
		}
	}
	out, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("unpacking the bundle: %w", err)
	}
	// tar.Reader yields exactly hdr.Size bytes or fails: a tar cut short
	// is refused here, never read as a shorter blob.
	// Only the writer side of out, so that one buffer serves every entry
	// (os.File's ReadFrom would allocate its own for each).
	_, err = io.CopyBuffer(struct{ io.Writer }{out}, tr, buf)
	if cerr := out.Close(); err == nil && cerr != nil {
		return fmt.Errorf("unpacking the bundle: %w", cerr)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return invalidf("%s is cut short (the tar ends inside it)", entryName(hdr.Name))
	}
	if err != nil {
		return fmt.Errorf("unpacking the bundle: %w", err)
	}
	return nil
}

// mkdirAllIn makes the folder dir (a checked layout name) and its parents
// inside root.
func mkdirAllIn(root *os.Root, dir string) error {
	p := ""
	for _, part := range strings.Split(dir, "/") {
		p = path.Join(p, part)
		if err := root.Mkdir(p, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("unpacking the bundle: %w", err)
		}
	}
	return nil
}

// invalidf is an audit_bundle_invalid refusal.
func invalidf(format string, args ...any) error {
	return blocking.New(blocking.AuditBundleInvalid, format, args...)
}
