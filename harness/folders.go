package harness

import (
	"errors"
	"io/fs"
	"os"
	"strings"

	"github.com/oa-dev/oa/blocking"
)

// checkFolders refuses an installation whose folders, between the install
// root and each of paths (relative, slash-separated), include one that is
// a symbolic link or not a folder: install would write through a link to
// wherever it points and uninstall would remove there, as a linked
// configuration file or skill folder is refused. The root itself (the
// project folder given, or the client's own folder) is followed, as is
// the user's home folder of a path starting with homePrefix. A folder
// that does not exist yet is fine: install makes it.
func (m *MCPClient) checkFolders(paths ...string) error {
	for _, p := range paths {
		if err := m.checkFoldersOf(p); err != nil {
			return err
		}
	}
	return nil
}

// checkFoldersOf checks the folders of one path, from the root down.
func (m *MCPClient) checkFoldersOf(p string) error {
	parts := strings.Split(p, "/")
	for i := 1; i < len(parts); i++ {
		d := strings.Join(parts[:i], "/")
		if d == "" || d == "." || d == "~" {
			continue
		}
		fi, err := os.Lstat(m.path(d))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil
		case err != nil:
			return dirInvalid(err, "a folder of the installation cannot be read")
		case fi.Mode()&fs.ModeSymlink != 0 || !fi.IsDir():
			return blocking.New(blocking.HarnessInstallDirInvalid, "the folder %s is a symbolic link or not a folder; oa neither writes nor removes through it", d).At(m.path(d), "")
		}
	}
	return nil
}

// layoutPaths are the paths of l whose folders checkFolders checks: a
// file inside each installed folder, the configuration file and the
// record.
func layoutPaths(server, projection, skill, record string) []string {
	out := []string{server, projection + "/x", record}
	if skill != "" {
		out = append(out, skill+"/x")
	}
	return out
}
