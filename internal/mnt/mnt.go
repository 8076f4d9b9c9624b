package mnt

import (
	"fmt"
	"strings"
)

// Error is a failed mount or unmount: it prints the operation, its source,
// target and flag names, and unwraps to the errno.
type Error struct {
	Op     string // "mount" or "unmount"
	Source string
	Target string
	Flags  uintptr
	Data   string
	Err    error
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s", e.Op)
	if e.Source != "" {
		fmt.Fprintf(&b, " %s on", e.Source)
	}
	fmt.Fprintf(&b, " %s", e.Target)
	if f := flagNames(e.Flags); f != "" {
		fmt.Fprintf(&b, " (%s)", f)
	}
	if e.Data != "" {
		fmt.Fprintf(&b, " [%s]", e.Data)
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	return b.String()
}

// Unwrap returns the underlying errno.
func (e *Error) Unwrap() error { return e.Err }
