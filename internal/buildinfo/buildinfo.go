// Package buildinfo says which build of zkconf is running: the version and
// commit `make build` stamps in with -ldflags -X, else what the Go toolchain
// recorded in the binary (a plain `go build` in a git checkout records the
// commit), and the Go version.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set by `make build`:
//
//	-ldflags "-X github.com/zkconf/zkconf/internal/buildinfo.version=v1.2.3
//	          -X github.com/zkconf/zkconf/internal/buildinfo.commit=0123abc"
//
// They are variables only because -X can set nothing else; nothing assigns
// them at run time.
var (
	version string
	commit  string
)

// Info is one binary's build.
type Info struct {
	Version   string // "git describe" of the build, "dev" when unknown
	Commit    string // commit hash, "-dirty" appended for a modified tree; "unknown" when unknown
	GoVersion string // the Go release that compiled the binary
}

// Get returns the build of the running binary.
func Get() Info {
	return resolve(version, commit, debug.ReadBuildInfo)
}

// resolve prefers the stamped values, then the toolchain's vcs settings.
func resolve(v, c string, read func() (*debug.BuildInfo, bool)) Info {
	info := Info{Version: v, Commit: c, GoVersion: runtime.Version()}
	if bi, ok := read(); ok {
		if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			// Built by `go install module@version`.
			info.Version = bi.Main.Version
		}
		if info.Commit == "" {
			var rev, modified string
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					rev = s.Value
				case "vcs.modified":
					modified = s.Value
				}
			}
			if rev != "" {
				info.Commit = rev
				if modified == "true" {
					info.Commit += "-dirty"
				}
			}
		}
	}
	if info.Version == "" {
		info.Version = "dev"
	}
	if info.Commit == "" {
		info.Commit = "unknown"
	}
	return info
}

// String is the --version line: "NAME VERSION (commit COMMIT, GOVERSION)".
func (i Info) String(name string) string {
	return fmt.Sprintf("%s %s (commit %s, %s)", name, i.Version, i.Commit, i.GoVersion)
}
