package overlay

import (
	"io/fs"
	"sync/atomic"
)

// CountLayerMkdirs counts the directories seals make in their new layers
// until the returned restore is called.
func CountLayerMkdirs() (count func() int64, restore func()) {
	var n atomic.Int64
	old := mkdirLayer
	mkdirLayer = func(p string, perm fs.FileMode) error {
		n.Add(1)
		return old(p, perm)
	}
	return n.Load, func() { mkdirLayer = old }
}
