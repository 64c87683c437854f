package host

import (
	"errors"
	"io/fs"
	"os"

	"github.com/oa-dev/oa/blocking"
)

// CheckHome refuses (home_not_folder) a host folder path that names
// something other than a folder, such as a file: every file of a host
// lives inside it. A path that does not exist yet is fine.
func CheckHome(home string) error {
	fi, err := os.Stat(home)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return blocking.New(blocking.HomeNotFolder, "the host folder cannot be read")
	case !fi.IsDir():
		return blocking.New(blocking.HomeNotFolder, "the host folder path names a file, not a folder")
	}
	return nil
}
