//go:build !linux

package runtime

import "github.com/tinehq/tine/engine"

// syncLogins carries nothing where forks have no home of their own.
func (m *Manager) syncLogins(engine.Ref) []string { return nil }

// WatchLogins does nothing where forks have no home of their own.
func (s *Sandboxed) WatchLogins(int) func() { return func() {} }
