// Package testkit holds the test helpers every package shares and that
// need nothing of tine: skipping without root, and writing the files of
// benchmark trees. Helpers that need an engine are in engine/enginetest.
package testkit

import (
	"os"
	"path/filepath"
	"testing"
)

// RequireRoot skips the test unless it runs as root; why says what needs
// root, as the skip message shows it ("requires root: why").
func RequireRoot(tb testing.TB, why string) {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("requires root: " + why)
	}
}

// WriteFile writes size bytes of letters to p, making its directory: the
// files of benchmark trees. Files of a different fill differ in every
// byte, so that no two of a tree are alike.
func WriteFile(tb testing.TB, p string, size int, fill byte) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		tb.Fatal(err)
	}
	data := make([]byte, size)
	for i := range data {
		data[i] = 'a' + (fill+byte(i))%26
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		tb.Fatal(err)
	}
}
