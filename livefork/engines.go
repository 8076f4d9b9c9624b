package livefork

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"

	"github.com/tinehq/tine/internal/lazyre"
)

// Engine says whether one live-fork engine can be used on this host, and
// why not.
type Engine struct {
	Name      string `json:"name"` // "ptrace" or "criu"
	Available bool   `json:"available"`
	Version   string `json:"version,omitempty"` // criu's
	Why       string `json:"why,omitempty"`     // why it is not available
	Note      string `json:"note,omitempty"`    // what it cannot do here, when available
}

// Engines reports the live-fork engines of this host: ptrace (Linux on
// x86-64) and CRIU (installed, version 4 or later, `criu check` passes).
func Engines(ctx context.Context) []Engine {
	pt := Engine{Name: "ptrace", Available: ptraceSupported}
	if !pt.Available {
		pt.Why = ErrUnsupported.Error()
	}
	return []Engine{pt, criuEngine(ctx)}
}

var criuVersion = lazyre.New(`Version: ((\d+)\.[0-9.]+)`)

// MinCRIU is the oldest CRIU major version the engine uses (Debian 12's
// 3.17 fails on newer kernels).
const MinCRIU = 4

func criuEngine(ctx context.Context) Engine {
	e := Engine{Name: "criu"}
	path, err := exec.LookPath("criu")
	if err != nil {
		e.Why = "criu is not installed (scripts/install-criu.sh builds CRIU 4 from Debian's source package)"
		return e
	}
	out, _ := exec.CommandContext(ctx, path, "--version").Output()
	m := criuVersion().FindSubmatch(out)
	if m == nil {
		e.Why = fmt.Sprintf("%s --version names no version", path)
		return e
	}
	e.Version = string(m[1])
	if major, _ := strconv.Atoi(string(m[2])); major < MinCRIU {
		e.Why = fmt.Sprintf("criu %s is older than %d (scripts/install-criu.sh builds CRIU 4)", e.Version, MinCRIU)
		return e
	}
	if err := CRIUProbe(ctx); err != nil {
		e.Why = "criu check fails: " + err.Error()
		return e
	}
	e.Available = true
	if !HasCapSysResource() {
		e.Note = "root's runs only: this process lacks CAP_SYS_RESOURCE (its capability bounding set leaves it out), which checkpointing another user's processes needs; their services restart instead"
	}
	return e
}
