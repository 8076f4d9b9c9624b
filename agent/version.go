package agent

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/tinehq/tine/internal/lazyre"
)

// Supported is the range of an agent's releases tine works with: Oldest
// and Newest are the releases CI runs its tests against (the real binary
// against the mock APIs). A release between them is expected to work; one
// older than Oldest lacks something tine needs.
type Supported struct {
	Kind   Kind   `json:"kind"`
	Binary string `json:"binary"` // the default binary's name
	Oldest string `json:"oldest"`
	Newest string `json:"newest"`
	// Why is what releases older than Oldest lack.
	Why string `json:"why"`
}

// SupportedReleases are the agents' supported ranges, as .ci/run pins them.
var SupportedReleases = []Supported{
	{Kind: Claude, Binary: "claude", Oldest: "2.1.197", Newest: "2.1.332",
		Why: "older releases lack --fork-session and the stream-json events tine reads usage from"},
	{Kind: Codex, Binary: "codex", Oldest: "0.160.0", Newest: "0.171.0",
		Why: "older releases lack `codex exec fork`, which continues a conversation in each fork"},
}

// Installed is what one agent's installed binary says of itself.
type Installed struct {
	Supported
	Path    string `json:"path,omitempty"`    // the binary found, "" when none
	Version string `json:"version,omitempty"` // as parsed from --version
	// Verdict is "supported", "older" (than Oldest), "newer" (than
	// Newest: untested), "missing" or "unknown" (no version printed).
	Verdict string `json:"verdict"`
	Note    string `json:"note"` // one sentence for a person
}

// versionRE finds a dotted release number in --version output
// ("2.1.332 (Claude Code)", "codex-cli 0.171.0").
var versionRE = lazyre.New(`\b(\d+)\.(\d+)\.(\d+)\b`)

// CheckInstalled finds each agent's binary on path (the caller's PATH,
// not this process's) and compares its version with the supported range.
func CheckInstalled(ctx context.Context, path string) []Installed {
	out := make([]Installed, 0, len(SupportedReleases))
	for _, s := range SupportedReleases {
		out = append(out, checkOne(ctx, s, path))
	}
	return out
}

func checkOne(ctx context.Context, s Supported, path string) Installed {
	in := Installed{Supported: s}
	bin, err := LookPath(s.Binary, path)
	if err != nil {
		in.Verdict, in.Note = "missing", fmt.Sprintf("%s is not on PATH: fork-runs with --agent %s fail until it is installed (%s %s is the newest tested)", s.Binary, s.Kind, s.Binary, s.Newest)
		return in
	}
	in.Path = bin
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	b, _ := exec.CommandContext(ctx, bin, "--version").Output()
	in.Version = versionRE().FindString(string(b))
	in.Verdict = Compare(s, in.Version)
	in.Note = map[string]string{
		"supported": fmt.Sprintf("%s %s: supported (%s to %s are tested)", s.Binary, in.Version, s.Oldest, s.Newest),
		"older":     fmt.Sprintf("%s %s is older than %s, the oldest supported: %s; upgrade it", s.Binary, in.Version, s.Oldest, s.Why),
		"newer":     fmt.Sprintf("%s %s is newer than %s, the newest tested: it likely works; report what does not", s.Binary, in.Version, s.Newest),
		"unknown":   fmt.Sprintf("%s printed no version for --version: it may not be %s", bin, s.Kind),
	}[in.Verdict]
	return in
}

// Compare places version in s's range: "supported", "older", "newer" or
// "unknown" when version is not a dotted release number.
func Compare(s Supported, version string) string {
	v, ok := parseVersion(version)
	if !ok {
		return "unknown"
	}
	lo, _ := parseVersion(s.Oldest)
	hi, _ := parseVersion(s.Newest)
	switch {
	case less(v, lo):
		return "older"
	case less(hi, v):
		return "newer"
	}
	return "supported"
}

func parseVersion(s string) ([3]int, bool) {
	var v [3]int
	parts := strings.Split(strings.TrimSpace(s), ".")
	if len(parts) != 3 {
		return v, false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return v, false
		}
		v[i] = n
	}
	return v, true
}

func less(a, b [3]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}
