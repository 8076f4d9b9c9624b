package engine

import (
	"testing"

	"golang.org/x/sys/unix"
)

// mountID returns the unique id of the mount p is on (never reused, as
// the short mount id is), or 0 on a kernel before 6.8 that has none.
func mountID(t *testing.T, p string) uint64 {
	t.Helper()
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, p, 0, unix.STATX_MNT_ID_UNIQUE, &st); err != nil {
		t.Fatal(err)
	}
	if st.Mask&unix.STATX_MNT_ID_UNIQUE == 0 {
		return 0
	}
	return st.Mnt_id
}
