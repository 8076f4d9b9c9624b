package copyfs

import "github.com/tinehq/tine/layer"

// Driver registers the copy backend: flat, and usable everywhere (it has
// no probe).
func Driver() layer.Driver {
	return layer.Driver{
		Name: "copy",
		New:  func() layer.Backend { return New() },
	}
}
