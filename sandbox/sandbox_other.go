//go:build !linux

package sandbox

import (
	"errors"
	"os/exec"
)

var errLinux = errors.New("running a command inside a run needs Linux mount namespaces")

func command(spec Spec) (*exec.Cmd, error) { return nil, errLinux }

func enter(spec Spec) (int, error) { return ExitCannotRun, errLinux }
