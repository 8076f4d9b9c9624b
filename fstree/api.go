package fstree

// API CONTRACT (stub, to be implemented): the helper owning fstree replaces
// this file with real code keeping these exact signatures.

import (
	"context"
	"errors"

	"github.com/tinehq/tine/layer"
)

// CopyOptions tunes Copy.
type CopyOptions struct {
	// Reflink clones file data with FICLONE instead of copying bytes.
	Reflink bool
	// RequireReflink makes a failed clone an error instead of a byte copy.
	RequireReflink bool
}

var errTODO = errors.New("fstree: not implemented")

// Copy copies the contents of directory src into directory dst, which must
// exist and be empty. Hard links inside src stay hard links inside dst.
func Copy(ctx context.Context, src, dst string, opt CopyOptions) error { return errTODO }

// MoveContents renames every entry of src into dst (same filesystem), leaving
// src empty. It fails with an error wrapping syscall.EXDEV across filesystems.
func MoveContents(src, dst string) error { return errTODO }

// SamePath reports whether a and b have the same signature: type, permission
// bits, and content (regular files) or target (symlinks) or device number.
// Directories compare by type and mode only.
func SamePath(a, b string) (bool, error) { return false, errTODO }

// Diff walks two trees and lists, sorted by path, where view differs from
// base, using SamePath semantics.
func Diff(ctx context.Context, base, view string) ([]layer.Change, error) { return nil, errTODO }

// DiskUsage returns the bytes of regular files under dir (each inode once).
func DiskUsage(dir string) (int64, error) { return 0, errTODO }
