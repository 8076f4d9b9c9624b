//go:build !linux

package engine

import "os"

// pinDir opens the directory p (off Linux, by its name).
func pinDir(p string) (*os.File, error) { return os.Open(p) }

// fdPath returns f's name: off Linux a directory is used by its path.
func fdPath(f *os.File) string { return f.Name() }
