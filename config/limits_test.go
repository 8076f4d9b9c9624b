package config

import (
	"testing"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/cgroup"
)

// A fork gets default pids and memory limits where tine.toml gives none
// (issue 31: a fork bomb in one fork reached the whole machine); the file's
// values, 0 included, win; the source gets only what the file says.
func TestLimits_Of(t *testing.T) {
	const ram = 16 << 30
	tests := []struct {
		name, doc string
		role      tine.Role
		want      cgroup.Limits
	}{
		{"ForkDefaults", "", tine.RoleFork, cgroup.Limits{Pids: DefaultForkPids, MemoryBytes: ram / DefaultForkMemoryDivisor}},
		{"SourceUnlimited", "", tine.RoleSource, cgroup.Limits{}},
		{"FileWins", "[limits]\npids = 100\nmemory = \"1G\"\ncpu = 1.5\n", tine.RoleFork, cgroup.Limits{Pids: 100, MemoryBytes: 1 << 30, CPU: 1.5}},
		{"ZeroLifts", "[limits]\npids = 0\nmemory = \"0\"\n", tine.RoleFork, cgroup.Limits{}},
		{"SourceGetsTheFile", "[limits]\npids = 100\n", tine.RoleSource, cgroup.Limits{Pids: 100}},
		{"OneKeyLeftOut", "[limits]\npids = 0\n", tine.RoleFork, cgroup.Limits{MemoryBytes: ram / DefaultForkMemoryDivisor}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse(tt.doc)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Limits.Of(tt.role, ram); got != tt.want {
				t.Errorf("Of(%s) = %+v, want %+v", tt.role, got, tt.want)
			}
		})
	}
	if got := Default().Limits.Of(tine.RoleFork, 0); got.MemoryBytes != 0 || got.Pids != DefaultForkPids {
		t.Errorf("unknown memory: %+v, want no memory default", got)
	}
}
