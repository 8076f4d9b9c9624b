package fstree

import (
	"fmt"
	"io/fs"
)

// DiskUsage returns the bytes of regular files under dir (each inode once).
// It counts apparent sizes, so shared reflinked extents count in full.
func DiskUsage(dir string) (int64, error) {
	var total int64
	seen := map[inodeKey]bool{}
	err := WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || !e.Type().IsRegular() {
			return err
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		if st := statOf(fi); st.nlink > 1 {
			if seen[st.key()] {
				return nil
			}
			seen[st.key()] = true
		}
		total += fi.Size()
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("fstree: disk usage of %s: %w", dir, err)
	}
	return total, nil
}
