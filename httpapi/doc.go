// Package httpapi is tine's JSON HTTP API, served by tine serve on a unix
// socket in the state directory (and on TCP with a bearer token): every
// operation of the CLI, over the engine, with errors mapped to HTTP
// statuses in one place, and fork-runs, which the server runs in the
// background until they end or it shuts down.
package httpapi
