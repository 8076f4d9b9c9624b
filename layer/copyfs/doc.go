// Package copyfs implements the portable "copy" layer backend: every layer
// and every view is a whole, plainly copied directory tree.
package copyfs
