package httpapi

import (
	"context"
	"net/http"

	"github.com/tinehq/tine/internal/access"
)

// SeesAll reports whether r's caller may see every workspace: a person
// (not code inside a run) who is root or the daemon's own user, as
// PersonOnly admits. A fleet node forwards such callers' requests about
// another node's runs to it as its bearer token's holder; a normal user's
// (Person) it forwards as that user.
func SeesAll(r *http.Request) bool {
	p, _ := r.Context().Value(peerKey).(peer)
	return p.run == "" && callerOf(r) == nil
}

// Person is r's caller when it is a person limited to their own
// workspaces: a normal user on a unix socket, as SO_PEERCRED told them,
// or one WithPerson set. It is nil for one who sees every workspace and
// for code inside a run.
func Person(r *http.Request) *access.Caller { return callerOf(r) }

// WithPerson returns ctx for a request made by person c, served as one
// on the people's socket with c's uid and groups is: limited to the
// workspaces c may use, acting as c. A fleet node sets it on a request
// another node forwarded for a user of that name.
func WithPerson(ctx context.Context, c *access.Caller) context.Context {
	return context.WithValue(ctx, peerKey, peer{user: c})
}
