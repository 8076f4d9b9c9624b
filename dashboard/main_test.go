package dashboard

import (
	"os"
	"testing"

	"github.com/tinehq/tine/supervisor"
)

// TestMain lets the test binary serve as the runs' supervisor: the engine
// launches supervisors by re-executing its own binary (os.Executable), as
// tine serve does when a fork-run started from the dashboard runs its
// agents.
func TestMain(m *testing.M) {
	if supervisor.IsSupervisor() {
		supervisor.Main()
	}
	os.Exit(m.Run())
}
