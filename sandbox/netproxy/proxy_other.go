//go:build !linux

package netproxy

import (
	"errors"
	"os"
)

var errLinux = errors.New("a sandbox's network of its own needs Linux namespaces")

// Pair is Linux only.
func (p *Proxy) Pair() (*os.File, error) { return nil, errLinux }

// Start is Linux only.
func (p *Proxy) Start() error { return errLinux }

// Prepare is Linux only.
func Prepare(s Setup) error { return errLinux }
