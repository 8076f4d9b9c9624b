// Package buildinfo says which tine this binary is: its module version and
// the commit it was built from, as the Go toolchain stamped them.
package buildinfo

import (
	"runtime/debug"
	"strings"
)

// Info is what the toolchain recorded about this binary's build.
type Info struct {
	Module   string `json:"module"`             // the main module's path
	Version  string `json:"version"`            // its module version, or "(devel)" for a build from a checkout
	Commit   string `json:"commit,omitempty"`   // the vcs revision, when the build stamped it
	Time     string `json:"time,omitempty"`     // the commit's time (RFC 3339)
	Modified bool   `json:"modified,omitempty"` // the checkout had uncommitted changes
	Go       string `json:"go"`                 // the toolchain's version
}

// Read returns this binary's build information; fields the build did not
// record are empty (Version "(devel)").
func Read() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Info{Version: "(devel)"}
	}
	return FromBuildInfo(bi)
}

// FromBuildInfo extracts Info from what runtime/debug reports.
func FromBuildInfo(bi *debug.BuildInfo) Info {
	in := Info{Module: bi.Main.Path, Version: bi.Main.Version, Go: bi.GoVersion}
	if in.Version == "" {
		in.Version = "(devel)"
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Commit = s.Value
		case "vcs.time":
			in.Time = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		}
	}
	return in
}

// Short is one word for the version: the module version when the build
// recorded one (with Go 1.24 and later a build from a checkout records a
// pseudo-version), else "devel+REVISION" (12 digits of the commit, "-dirty"
// with uncommitted changes), else "devel".
func (in Info) Short() string {
	if in.Version != "" && in.Version != "(devel)" {
		return in.Version
	}
	if in.Commit == "" {
		return "devel"
	}
	dirty := ""
	if in.Modified {
		dirty = "-dirty"
	}
	return "devel+" + in.Commit[:min(12, len(in.Commit))] + dirty
}

// String is the line tine --version prints: "tine VERSION (commit C, TIME,
// GO)", leaving out what the build did not record.
func (in Info) String() string {
	s := "tine " + in.Short()
	var extra []string
	if in.Commit != "" {
		c := "commit " + in.Commit
		if in.Modified {
			c += " with uncommitted changes"
		}
		extra = append(extra, c)
	}
	if in.Time != "" {
		extra = append(extra, in.Time)
	}
	if in.Go != "" {
		extra = append(extra, in.Go)
	}
	if len(extra) > 0 {
		s += " (" + strings.Join(extra, ", ") + ")"
	}
	return s
}
