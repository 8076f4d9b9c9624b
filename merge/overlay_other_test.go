//go:build !linux

package merge

import (
	"errors"
	"testing"
)

// overlayOver cannot mount anything off Linux.
func overlayOver(b testing.TB, lower string) (string, error) {
	return "", errors.New("overlay views need Linux")
}
