package capability

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/internal/atomicfile"
)

// Errors of a refused request. Each wraps tine.ErrPrivilege, so the CLI
// exits with the status for insufficient privileges; tell them apart with
// errors.Is.
var (
	// ErrExpired means the request was issued too long ago or too far ahead.
	ErrExpired = fmt.Errorf("request expired: %w", tine.ErrPrivilege)
	// ErrReplayed means the run already used the request's nonce.
	ErrReplayed = fmt.Errorf("request replayed: %w", tine.ErrPrivilege)
	// ErrForged means the request is malformed, its MAC does not match, or it
	// was signed for another purpose or method.
	ErrForged = fmt.Errorf("request forged: %w", tine.ErrPrivilege)
	// ErrRevoked means the run has no live capability of the request's
	// generation: none was issued, it was revoked, or a newer one replaced it.
	ErrRevoked = fmt.Errorf("capability revoked: %w", tine.ErrPrivilege)
	// ErrScope means the lineage of the two runs does not allow the action.
	ErrScope = fmt.Errorf("out of scope: %w", tine.ErrPrivilege)
)

// SecretSize is the length of a capability's secret in bytes.
const SecretSize = 32

// tokenPrefix starts every token and names its format.
const tokenPrefix = "tinecap1"

// b64 encodes secrets, nonces and MACs: URL-safe, unpadded.
var b64 = base64.RawURLEncoding

// Capability is a run's credential as the run holds it: what a request is
// signed with. Its String and GoString hide the secret; Token reveals it.
type Capability struct {
	Run        string
	Secret     []byte
	Generation int
	IssuedAt   time.Time // zero in a capability parsed from a token
}

// New returns a capability for run with a fresh random secret and no
// generation yet; Issue stores one and gives it its generation.
func New(run string) (Capability, error) {
	c := Capability{Run: run, Secret: make([]byte, SecretSize)}
	if _, err := rand.Read(c.Secret); err != nil {
		return Capability{}, fmt.Errorf("new capability for run %q: %w", run, err)
	}
	return c, nil
}

// String describes c without its secret.
func (c Capability) String() string {
	return fmt.Sprintf("capability of run %s, generation %d", c.Run, c.Generation)
}

// GoString describes c without its secret, for %#v.
func (c Capability) GoString() string { return "capability.Capability{" + c.String() + "}" }

// Token encodes c as one line for the run's token file:
// "tinecap1.<run>.<generation>.<secret in unpadded base64url>".
func (c Capability) Token() string {
	return strings.Join([]string{tokenPrefix, c.Run, strconv.Itoa(c.Generation), b64.EncodeToString(c.Secret)}, ".")
}

// Parse decodes a token made by Token. Surrounding white space is ignored.
// A malformed token wraps ErrForged.
func Parse(token string) (Capability, error) {
	parts := strings.Split(strings.TrimSpace(token), ".")
	if len(parts) != 4 || parts[0] != tokenPrefix || parts[1] == "" {
		return Capability{}, fmt.Errorf("parse capability token: bad shape: %w", ErrForged)
	}
	gen, err := strconv.Atoi(parts[2])
	if err != nil || gen < 1 {
		return Capability{}, fmt.Errorf("parse capability token: bad generation: %w", ErrForged)
	}
	secret, err := b64.DecodeString(parts[3])
	if err != nil || len(secret) != SecretSize {
		return Capability{}, fmt.Errorf("parse capability token: bad secret: %w", ErrForged)
	}
	return Capability{Run: parts[1], Secret: secret, Generation: gen}, nil
}

// WriteFile writes c's token to path, readable by its owner only: uid and
// gid (-1: this process's user), the run's processes' user. It writes a
// temporary file beside path, theirs, and renames it over path, so a
// reader sees the old token or the new one, never half of one, and the
// run's user is never refused it in between.
func WriteFile(path string, c Capability, uid, gid int) error {
	if err := atomicfile.WriteOwned(path, []byte(c.Token()+"\n"), 0o600, uid, gid, atomicfile.ExactMode); err != nil {
		return fmt.Errorf("write capability: %w", err)
	}
	return nil
}

// ReadFile reads the token that WriteFile wrote to path.
func ReadFile(path string) (Capability, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Capability{}, fmt.Errorf("read capability: %w", err)
	}
	c, err := Parse(string(b))
	if err != nil {
		return Capability{}, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}
