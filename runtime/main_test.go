package runtime_test

import (
	"testing"

	"github.com/tinehq/tine/supervisor/supervisortest"
)

// TestMain lets the test binary serve as the runs' supervisors, which the
// runtime launches by re-executing its own binary, as tine does.
func TestMain(m *testing.M) { supervisortest.Main(m) }
