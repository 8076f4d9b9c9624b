// Package dashboard serves tine's web dashboard: server-rendered HTML pages
// under /ui/ over one engine, showing workspaces and their run trees, a
// group's forks side by side (with the evidence, verdict and outcome of
// the fork-run that made it, if one did), a run's processes, events and
// logs, and the approvals waiting for a person, with forms that resolve
// runs and groups after a dry-run confirmation, and (when the daemon lends
// it a starter) a form on a live run's page that starts a fork-run of it
// and opens its group page. A small script refreshes the pages from a
// server-sent event stream of the event log; on a group page the stream
// also says when the fork-run's report changes, and the script then swaps
// in the fork-run section alone.
package dashboard
