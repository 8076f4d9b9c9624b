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
			"devel+0123456789ab-dirty", "tine devel+0123456789ab-dirty (commit " + rev + " with uncommitted changes, 2026-01-02T03:04:05Z, go1.26.0)"},
		{"release", debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/tinehq/tine", Version: "v1.2.3"}},
			"v1.2.3", "tine v1.2.3 (go1.26.0)"},
		{"pseudo-version from a checkout", debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20260102030405-0123456789ab"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: "false"}}},
			"v0.0.0-20260102030405-0123456789ab", "tine v0.0.0-20260102030405-0123456789ab (commit " + rev + ")"},
		{"nothing recorded", debug.BuildInfo{}, "devel", "tine devel"},
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
