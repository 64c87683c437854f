package launcher

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// hideFolders covers each folder of s.Hide with an empty read-only tmpfs,
// mounting back what of s.Read and s.Write lies inside it (exact maps an
// exact path to its descriptor's name, which the bind mount is made
// from, so it is the very file checked). A folder that is a link (such
// as /var/run to /run), missing, or inside a grant, is left as it is.
func hideFolders(s *Spec, exact map[string]string) error {
	granted := slices.Concat(s.Read, s.Write)
	for _, dir := range s.Hide {
		if !isRealDir(dir) || slices.ContainsFunc(granted, func(g string) bool { return Within(dir, g) }) {
			continue
		}
		if err := hideFolder(dir, keptInside(dir, granted), exact); err != nil {
			return fmt.Errorf("hiding a folder: %w", err)
		}
	}
	return nil
}

// keptInside are the granted paths inside dir, outermost first, leaving
// out one inside another (it is mounted back with it).
func keptInside(dir string, granted []string) []string {
	var inside []string
	for _, g := range granted {
		if g != dir && Within(g, dir) {
			inside = append(inside, g)
		}
	}
	slices.Sort(inside)
	var out []string
	for _, g := range inside {
		if len(out) == 0 || !Within(g, out[len(out)-1]) {
			out = append(out, g)
		}
	}
	return out
}

// hideFolder mounts an empty tmpfs over dir and binds each of keep back in
// place: each is opened before the tmpfs covers it, and mounted from that
// descriptor.
func hideFolder(dir string, keep []string, exact map[string]string) error {
	var fds []int
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	sources := make([]string, len(keep))
	for i, k := range keep {
		if name, ok := exact[k]; ok {
			sources[i] = name
			continue
		}
		fd, err := unix.Open(k, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			sources[i] = "" // gone: nothing to mount back
			continue
		}
		fds = append(fds, fd)
		sources[i] = "/proc/self/fd/" + strconv.Itoa(fd)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=64k,mode=755"); err != nil {
		return err
	}
	for i, k := range keep {
		if sources[i] == "" {
			continue
		}
		if err := mountPoint(k, isDir(sources[i])); err != nil {
			return err
		}
		if err := unix.Mount(sources[i], k, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return err
		}
	}
	return unix.Mount("", dir, "", unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
}

// mountPoint makes path (a folder, or an empty file) and the folders
// above it, inside the fresh tmpfs.
func mountPoint(path string, dir bool) error {
	// Not path/filepath: its init would run the launcher after most of
	// oa's package inits (TestLauncherRunsEarly).
	if err := os.MkdirAll(path[:max(strings.LastIndexByte(path, '/'), 1)], 0o755); err != nil {
		return err
	}
	if dir {
		return os.Mkdir(path, 0o755)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

// isRealDir reports whether path is a folder and not a link to one.
func isRealDir(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.IsDir()
}
