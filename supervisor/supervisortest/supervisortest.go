// Package supervisortest lets a package's test binary serve as the
// supervisors its tests launch.
package supervisortest

import (
	"os"
	"testing"

	"github.com/tinehq/tine/supervisor"
)

// Main is a TestMain for packages whose tests start runs' processes: the
// engine launches a supervisor by re-executing its own binary
// (os.Executable), as tine does, so a test binary started as a supervisor
// serves as one; otherwise it runs m's tests.
//
//	func TestMain(m *testing.M) { supervisortest.Main(m) }
func Main(m *testing.M) {
	if supervisor.IsSupervisor() {
		supervisor.Main()
	}
	os.Exit(m.Run())
}
