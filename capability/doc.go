// Package capability authenticates requests that code inside a run makes to
// the host, and scopes them by lineage.
//
// Each run holds one capability: its run id, a generation and a 32-byte
// secret, written as a token into a file inside the run. The host keeps the
// same secret in the store (tine.Capability). A request carries no secret:
// it carries a nonce, the time it was issued and an HMAC-SHA256, keyed by the
// secret, over an unambiguous encoding of the purpose, run id, generation,
// nonce, issue time, method and JSON arguments. A Verifier refuses a request
// that is too old or from the future (ErrExpired), whose nonce the run has
// already used within the window (ErrReplayed), whose MAC does not match or
// that was signed for another purpose or method (ErrForged), or whose
// capability is unknown, revoked or superseded (ErrRevoked). Scope then
// decides whether the authenticated run may act on its target (ErrScope).
//
// Forking rotates capabilities: Rotate revokes the parent's capability
// before the clone, so the clone never carries a live secret, and issues
// fresh ones to the parent and every fork after it. A token leaked before
// the fork no longer verifies.
//
// Every refusal of this package wraps tine.ErrPrivilege; errors of the
// store, the file system or the random source are returned as they are.
package capability
