package cli

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// BuildVersion is what oa was built from: the module version (a release
// tag from go install …@vX, a pseudo-version from …@latest or a commit,
// "(devel)" from a checkout) and, when the go tool recorded it, the VCS
// revision, its time and whether the work tree was modified.
type BuildVersion struct {
	Version   string `json:"version"`
	Revision  string `json:"revision,omitempty"`
	Time      string `json:"revisionTime,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"goVersion,omitempty"`
}

// Build reads oa's own build information (runtime/debug.ReadBuildInfo).
func Build() BuildVersion {
	info, _ := debug.ReadBuildInfo()
	return buildVersionOf(info)
}

func buildVersionOf(info *debug.BuildInfo) BuildVersion {
	b := BuildVersion{Version: "(devel)"}
	if info == nil {
		return b
	}
	if info.Main.Version != "" {
		b.Version = info.Main.Version
	}
	b.GoVersion = info.GoVersion
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.Time = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// String is the version line oa version and oa --version print:
// "oa VERSION (protocol P, revision R of TIME, modified)"; a build with
// no VCS information says so.
func (b BuildVersion) String(protocol string) string {
	parts := []string{"protocol " + protocol}
	switch {
	case b.Revision != "" && b.Time != "":
		parts = append(parts, fmt.Sprintf("revision %s of %s", b.Revision, b.Time))
	case b.Revision != "":
		parts = append(parts, "revision "+b.Revision)
	default:
		parts = append(parts, "no VCS revision recorded")
	}
	if b.Modified {
		parts = append(parts, "modified")
	}
	return fmt.Sprintf("oa %s (%s)", b.Version, strings.Join(parts, ", "))
}

// Version is the module version oa was built at, or "(devel)".
func Version() string { return Build().Version }
