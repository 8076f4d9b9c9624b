//go:build !linux

package confine

import (
	"errors"
	"os"
)

var errLinux = errors.New("confinement needs Linux")

// Probe says what of s this system can enforce: nothing.
func Probe(s Spec) Applied {
	return Applied{Unavailable: []string{"landlock and seccomp need Linux"}}
}

// Command cannot confine anything here.
func Command(s Spec, path string, argv []string) (string, []string, string, error) {
	return "", nil, "", errLinux
}

// IsWrapper reports whether this process is the confining wrapper.
func IsWrapper() bool { return false }

// Main is the wrapper; it exists only on Linux.
func Main() { os.Exit(126) }

// Apply confines nothing here.
func Apply(s Spec) error { return errLinux }

// PlanFor cannot confine anything here.
func PlanFor(s Spec) (Plan, error) { return Plan{}, errLinux }
