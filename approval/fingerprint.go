package approval

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"slices"
	"strings"

	"github.com/tinehq/tine"
)

// Fingerprint sums up what an approval of an action on r depends on: r's
// id, parent, role, state, resolution and base version, and its readiness
// as the caller judges it. Compute it when the approval is offered and
// again when it is consumed; any change makes the approval stale.
func Fingerprint(r *tine.Run, readiness string) string {
	h := sha256.New()
	for _, f := range []string{"tine-approval-run-v1", r.ID, r.Parent, string(r.Role), string(r.State),
		string(r.Resolution), r.Base, readiness} {
		field(h, f)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// GroupFingerprint sums up the fingerprints of runs, each with its
// readiness, in an order independent of the slice's: an approval for a
// group goes stale when any of its runs changes, joins or leaves.
func GroupFingerprint(runs []*tine.Run, readiness func(*tine.Run) string) string {
	fps := make([]string, 0, len(runs))
	for _, r := range runs {
		fps = append(fps, Fingerprint(r, readiness(r)))
	}
	slices.Sort(fps)
	h := sha256.New()
	field(h, "tine-approval-group-v1")
	field(h, strings.Join(fps, ","))
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// field hashes s with its length before it, so fields cannot run together.
func field(h hash.Hash, s string) {
	h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(s))))
	h.Write([]byte(s))
}
