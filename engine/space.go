package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/tinehq/tine/fstree"
)

// fullDiskError is a command that failed for want of space: its message is
// one line naming the full disk and what to free; the cause (ENOSPC or
// EDQUOT, and where it struck) stays in the chain for errors.Is.
type fullDiskError struct {
	msg string
	err error
}

func (e *fullDiskError) Error() string { return e.msg }
func (e *fullDiskError) Unwrap() error { return e.err }

// diskFull rewrites err, when it says a disk is out of space or over quota,
// as a fullDiskError: op failed because the disk holding the state
// directory (or, when the failed write was there, the workspace at path)
// is full, and outcome says what the failure left ("nothing changed").
// Any other error is returned as it is.
func (e *Engine) diskFull(err error, op, path, outcome string) error {
	var full *fullDiskError
	if err == nil || errors.As(err, &full) || !(errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)) {
		return err
	}
	dir, free := e.home, "tine discard the forks you no longer need; tine doctor --purge empties tine's quarantine"
	if at := failedPath(err); at != "" && path != "" && !fstree.Within(at, e.home) && fstree.Within(at, path) {
		dir, free = path, "files you no longer need"
	}
	return &fullDiskError{err: err, msg: fmt.Sprintf("%s: the disk holding %s is full; %s. Free space on it (%s) and retry", op, dir, outcome, free)}
}

// failedPath returns the path the first path error in err's chain names,
// "" if none does.
func failedPath(err error) string {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		return filepath.Clean(pe.Path)
	case errors.As(err, &le):
		return filepath.Clean(le.New)
	}
	return ""
}
