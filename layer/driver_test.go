package layer

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tinehq/tine"
)

// TestDrivers_Lookup: a registered name is found; any other is refused,
// naming the choices in their order.
func TestDrivers_Lookup(t *testing.T) {
	ds := Drivers{{Name: "a", Stacking: true}, {Name: "b"}, {Name: "c"}}
	if d, err := ds.Lookup("a"); err != nil || !d.Stacking {
		t.Errorf("Lookup(a) = %+v, %v", d, err)
	}
	for _, c := range []struct {
		ds   Drivers
		want string
	}{
		{ds, `unknown backend "z" (want auto, a, b or c): `},
		{Drivers{{Name: "only"}}, `unknown backend "z" (want auto, only): `},
	} {
		_, err := c.ds.Lookup("z")
		if !errors.Is(err, tine.ErrInvalid) || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("Lookup(z) = %v, want %q…", err, c.want)
		}
	}
}

// TestSameFilesystem: two directories of one temporary directory share a
// filesystem; a missing path is an error, not a match.
func TestSameFilesystem(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	os.Mkdir(a, 0o700)
	os.Mkdir(b, 0o700)
	if err := SameFilesystem(a, b); err != nil {
		t.Errorf("SameFilesystem(%s, %s) = %v", a, b, err)
	}
	if err := SameFilesystem(filepath.Join(dir, "missing"), b); err == nil {
		t.Error("SameFilesystem of a missing path = nil")
	}
}
