//go:build !(linux && amd64)

package livefork

import "context"

// Check returns ErrUnsupported: live fork needs Linux on x86-64.
func Check(pid int) error { return ErrUnsupported }

// Session holds processes seized for live fork. It is empty here.
type Session struct{}

// Seize returns ErrUnsupported: live fork needs Linux on x86-64.
func Seize(pids []int) (*Session, error) { return nil, ErrUnsupported }

// Fork returns ErrUnsupported: live fork needs Linux on x86-64.
func (s *Session) Fork(pid int, t Target) (Result, error) { return Result{Pid: pid}, ErrUnsupported }

// Close has nothing to release here.
func (s *Session) Close() error { return nil }

// CRIUDump returns ErrUnsupported: the CRIU engine needs Linux on x86-64.
func CRIUDump(ctx context.Context, s DumpSpec) (*Dump, error) { return nil, ErrUnsupported }

// UnixLinks returns ErrUnsupported: the CRIU engine needs Linux on x86-64.
func UnixLinks(ns int, roots []int) ([][]UnixLink, error) { return nil, ErrUnsupported }

// Restore returns ErrUnsupported: the CRIU engine needs Linux on x86-64.
func (d *Dump) Restore(ctx context.Context, r RestoreSpec) (Restored, error) {
	return Restored{}, ErrUnsupported
}

// ImagesDir returns ErrUnsupported: the CRIU engine needs Linux on x86-64.
func ImagesDir(dir string) (string, func(), error) { return "", nil, ErrUnsupported }

// ptraceSupported says the ptrace engine works on this platform.
const ptraceSupported = false
