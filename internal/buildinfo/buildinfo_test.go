package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	rev := "0123456789abcdef0123456789abcdef01234567"
	cases := []struct {
		name       string
		bi         debug.BuildInfo
		short, str string
	}{
		{"checkout", debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/tinehq/tine", Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}, {Key: "vcs.modified", Value: "true"}}},
			"v" + Release + "-dev+0123456789ab.dirty", "tine v" + Release + "-dev+0123456789ab.dirty (commit " + rev + " with uncommitted changes, 2026-01-02T03:04:05Z, go1.26.0)"},
		{"release", debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/tinehq/tine", Version: "v1.2.3"}},
			"v1.2.3", "tine v1.2.3 (go1.26.0)"},
		{"pseudo-version from a checkout", debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20260102030405-0123456789ab"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: "false"}}},
			"v" + Release + "-dev+0123456789ab", "tine v" + Release + "-dev+0123456789ab (commit " + rev + ")"},
		{"nothing recorded", debug.BuildInfo{}, "v" + Release + "-dev", "tine v" + Release + "-dev"},
	}
	for _, c := range cases {
		in := FromBuildInfo(&c.bi)
		if got := in.Short(); got != c.short {
			t.Errorf("%s: Short() = %q, want %q", c.name, got, c.short)
		}
		if got := in.String(); got != c.str {
			t.Errorf("%s: String() = %q, want %q", c.name, got, c.str)
		}
	}
}

// A build stamped at link time (quickstart, CI) names its commit even
// without a VCS stamp (-buildvcs=false, a tarball), and its version.
func TestStamped(t *testing.T) {
	rev := "fedcba9876543210fedcba9876543210fedcba98"
	in := Info{Version: "(devel)", Go: "go1.26.0"}.stamped("", rev)
	if got, want := in.Short(), "v"+Release+"-dev+fedcba987654"; got != want {
		t.Errorf("commit stamped: Short() = %q, want %q", got, want)
	}
	if got := (Info{Version: "(devel)"}).stamped("v1.0.0", rev).Short(); got != "v1.0.0" {
		t.Errorf("version stamped: Short() = %q, want v1.0.0", got)
	}
}
