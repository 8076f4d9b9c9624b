// Package lazyre compiles a package's regular expressions on first use,
// not at the start of every tine command: a command pays only for the
// expressions its own work uses.
package lazyre

import (
	"regexp"
	"sync"
)

// New returns a function that compiles expr on its first call, panicking
// as regexp.MustCompile does when expr does not parse, and returns the
// same *regexp.Regexp on every call.
func New(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
