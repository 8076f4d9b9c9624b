// Package plan is what both scopes of a merge share: the plan they make (one
// entry per path, with its action) and how they read the three trees a plan
// compares (the fork point's files, the run's and the target's): views that
// never follow a symlink in a parent, and signatures compared without
// reading what the stats already tell apart. Package merge re-exports the
// plan's types; nothing outside merge imports this package.
package plan
