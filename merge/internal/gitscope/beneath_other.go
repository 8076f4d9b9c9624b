//go:build !linux

package gitscope

import (
	"os"
	"path/filepath"
	"syscall"
)

// openBeneath opens the file rel below directory top for reading; off
// Linux only its last component is kept from being a symbolic link.
func openBeneath(top, rel string) (*os.File, error) {
	return os.OpenFile(filepath.Join(top, rel), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
}
