// Package builtin lists the file backends tine ships, in the order "auto"
// tries them: overlay, btrfs, reflink, copy. The program (cmd/tine, and
// the test kits) registers them with the engine (engine.WithBackends); the
// engine names none.
package builtin

import (
	"github.com/tinehq/tine/layer"
	"github.com/tinehq/tine/layer/btrfs"
	"github.com/tinehq/tine/layer/copyfs"
	"github.com/tinehq/tine/layer/overlay"
	"github.com/tinehq/tine/layer/reflink"
)

// Backends returns tine's backends, fastest first: the order "auto" tries
// them.
func Backends() layer.Drivers {
	return layer.Drivers{overlay.Driver(), btrfs.Driver(), reflink.Driver(), copyfs.Driver()}
}
