// Package examples embeds the example bundles that `oa init` writes.
package examples

import (
	"embed"
	"io/fs"
	"os"
)

//go:embed clinic-triage invoice-approval
var bundles embed.FS

// Default is the bundle `oa init` writes when no example is named.
const Default = "clinic-triage"

// Names returns the example bundle names, sorted.
func Names() []string {
	entries, _ := fs.ReadDir(bundles, ".")
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	return names
}

// Bundle returns the files of the example bundle called name.
func Bundle(name string) (fs.FS, error) {
	if _, err := fs.Stat(bundles, name); err != nil {
		return nil, err
	}
	return fs.Sub(bundles, name)
}

// Write copies the example bundle called name into dir, creating it.
func Write(name, dir string) error {
	src, err := Bundle(name)
	if err != nil {
		return err
	}
	return os.CopyFS(dir, src)
}
