package console

import "io/fs"

// subFS is the embedded folder dir.
func subFS(dir string) (fs.FS, error) { return fs.Sub(files, dir) }
