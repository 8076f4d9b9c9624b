// Package dashboard serves tine's web dashboard: server-rendered HTML pages
// under /ui/ over one engine, showing workspaces and their run trees, a
// group's forks side by side, a run's processes, events and logs, and the
// approvals waiting for a person, with forms that resolve runs and groups
// after a dry-run confirmation. A small script refreshes the pages from a
// server-sent event stream of the event log.
package dashboard
