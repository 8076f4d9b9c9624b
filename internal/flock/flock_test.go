package flock

import (
	"path/filepath"
	"testing"
)

func TestTry_RefusedWhileHeld(t *testing.T) {
	p := filepath.Join(t.TempDir(), "l")
	release, err := Lock(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := Try(p); ok {
		t.Fatal("Try took a lock another holds")
	}
	release()
	r2, ok := Try(p)
	if !ok {
		t.Fatal("Try refused a released lock")
	}
	r2()
}
