//go:build !linux

package supervisor

import (
	"context"
	"errors"
	"os"
)

var errLinux = errors.New("run supervisors need Linux namespaces")

// IsSupervisor reports whether this process was launched as a supervisor.
func IsSupervisor() bool { return false }

// Main is the supervisor process; it exists only on Linux.
func Main() { os.Exit(1) }

// Launch starts a run's supervisor; it needs Linux.
func Launch(ctx context.Context, spec Spec, setup func(pid int) error) (int, error) {
	return 0, errLinux
}

// startWatchdog starts a freeze's watchdog; freezing needs Linux.
func startWatchdog(spec watchSpec) (*watchdog, error) { return nil, errLinux }

// watchdog is a freeze's watchdog; there is none off Linux.
type watchdog struct{ pid int }

func (d *watchdog) release() {}

// answers reports whether a supervisor listens at path; none runs here.
func answers(path string) bool { return false }

// ExposeNamespaces makes a process's namespaces openable inside a run;
// it needs Linux.
func ExposeNamespaces(dir string, sup, pid int) (nsDir string, remove func() error, err error) {
	return "", nil, errLinux
}
