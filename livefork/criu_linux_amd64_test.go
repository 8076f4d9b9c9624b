package livefork

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A stats-dump image written by criu 4.2.1: frozen_time is 153451 µs.
func TestFrozenTime(t *testing.T) {
	img := []byte("\x40\x59\x10\x55\x06\x33\x09\x57\x27\x00\x00\x00\x0a\x25\x08\xa1\x05\x10\xeb\xae\x09\x18\xcf\x86\x04\x20\x8c\x83\x02\x28\xb9\x16\x30\x00\x38\xa7\x15\x40\x00\x48\x00\x50\x08\x58\x08\x60\x00\x68\x00\x70\x00")
	path := filepath.Join(t.TempDir(), "stats-dump")
	if err := os.WriteFile(path, img, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := frozenTime(path, time.Second); got != 153451*time.Microsecond {
		t.Errorf("frozenTime = %v, want 153.451ms", got)
	}
	if got := frozenTime(path+".missing", time.Second); got != time.Second {
		t.Errorf("frozenTime of no image = %v, want the whole dump's time", got)
	}
}
