package resolvecheck

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// holes returns the offsets of the holeBlock-aligned blocks of file name
// that hold no data, as SEEK_DATA and SEEK_HOLE see them.
func holes(name string) ([]int64, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := fi.Size()
	var out []int64
	fd := int(f.Fd())
	for off := int64(0); off < size; {
		hole, err := unix.Seek(fd, off, unix.SEEK_HOLE)
		if err != nil || hole >= size {
			return out, err
		}
		data, err := unix.Seek(fd, hole, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			data = size
		} else if err != nil {
			return nil, err
		}
		for b := (hole + holeBlock - 1) / holeBlock * holeBlock; b+holeBlock <= data; b += holeBlock {
			out = append(out, b)
		}
		off = data
	}
	return out, nil
}
