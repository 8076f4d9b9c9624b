// Package buildinfo says which tine this binary is: its semantic version
// and the commit it was built from. Every build has both where they can be
// known: scripts/quickstart.sh and .ci/run stamp them with -ldflags (see
// LDFlags); any other build takes the module version the toolchain
// recorded (a release tag), else Release with "-dev", and the commit from
// the toolchain's VCS stamp.
package buildinfo

import (
	"runtime/debug"
	"strings"

	"github.com/tinehq/tine/internal/lazyre"
)

// Release is the semantic version of this source tree, without "v": a
// build that no tag names is Release-dev.
const Release = "0.9.0"

// Set at link time: go build -ldflags "-X
// github.com/tinehq/tine/internal/buildinfo.commit=REV -X ...version=vX.Y.Z"
// (scripts/quickstart.sh and .ci/run do, so a build without .git still
// names its commit).
var (
	version string
	commit  string
)

// Info is what is known of this binary's build.
type Info struct {
	Module   string `json:"module"`             // the main module's path
	Version  string `json:"version"`            // its module version, or "(devel)" for a build from a checkout
	Commit   string `json:"commit,omitempty"`   // the vcs revision, when the build stamped it
	Time     string `json:"time,omitempty"`     // the commit's time (RFC 3339)
	Modified bool   `json:"modified,omitempty"` // the checkout had uncommitted changes
	Go       string `json:"go"`                 // the toolchain's version
}

// Read returns this binary's build information: what the toolchain
// recorded, with the version and commit stamped at link time over it.
func Read() Info {
	in := Info{Version: "(devel)"}
	if bi, ok := debug.ReadBuildInfo(); ok {
		in = FromBuildInfo(bi)
	}
	return in.stamped(version, commit)
}

// stamped is in with the link-time version and commit, where set.
func (in Info) stamped(version, commit string) Info {
	if version != "" {
		in.Version = version
	}
	if commit != "" && commit != in.Commit {
		in.Commit, in.Time, in.Modified = commit, "", false
	}
	return in
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

// Short is one word for the version, always a semantic version: a
// release's tag (vX.Y.Z), else vRelease-dev, with "+REVISION" (12 digits of
// the commit, ".dirty" with uncommitted changes) when the commit is known
// and no tag names the build. A pseudo-version (what Go 1.24 and later
// records for a checkout) is no release: it reads as vRelease-dev+REVISION.
func (in Info) Short() string {
	if isRelease(in.Version) {
		return in.Version
	}
	v := "v" + Release + "-dev"
	if in.Commit == "" {
		return v
	}
	v += "+" + in.Commit[:min(12, len(in.Commit))]
	if in.Modified {
		v += ".dirty"
	}
	return v
}

// isRelease reports whether v is a version a tag names: vX.Y.Z with an
// optional pre-release, not "(devel)" nor a pseudo-version (which ends in
// a 14-digit time and a 12-digit commit).
func isRelease(v string) bool {
	return strings.HasPrefix(v, "v") && !pseudo().MatchString(v)
}

var pseudo = lazyre.New(`[0-9]{14}-[0-9a-f]{12}$`)

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
