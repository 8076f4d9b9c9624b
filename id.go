package tine

import (
	"crypto/rand"
	"encoding/base32"
	"strings"
)

// Prefixes of generated ids, so an id says what it names.
const (
	PrefixWorkspace = "w"
	PrefixRun       = "r"
	PrefixVersion   = "v"
	PrefixLayer     = "l"
	PrefixGroup     = "g"
)

var idEncoding = base32.NewEncoding("abcdefghijkmnpqrstuvwxyz23456789").WithPadding(base32.NoPadding)

// NewID returns a short, readable, random id: prefix followed by eight
// characters from an alphabet without look-alikes (no l, o, 0 or 1).
func NewID(prefix string) string {
	var b [5]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("tine: no randomness: " + err.Error())
	}
	return prefix + idEncoding.EncodeToString(b[:])
}

// LooksLikeID reports whether s has the shape of an id with the given prefix.
func LooksLikeID(prefix, s string) bool {
	if len(s) != len(prefix)+8 || !strings.HasPrefix(s, prefix) {
		return false
	}
	_, err := idEncoding.DecodeString(s[len(prefix):])
	return err == nil
}
