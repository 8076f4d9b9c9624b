package httpapi

import "net/http"

// SeesAll reports whether r's caller may see every workspace: a person
// (not code inside a run) who is root or the daemon's own user, as
// PersonOnly admits. A fleet node tells such callers where another node's
// runs live; the API answers the others about their own workspaces alone.
func SeesAll(r *http.Request) bool {
	p, _ := r.Context().Value(peerKey).(peer)
	return p.run == "" && callerOf(r) == nil
}
