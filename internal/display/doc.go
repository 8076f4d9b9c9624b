// Package display makes strings that came from a run — its file names, an
// agent's output, an approach label — safe to show to a person: what
// reaches a terminal or a page can neither move the cursor, rewrite a line
// nor pass for another name. It is the one place the CLI and the dashboard
// decide how such a string is written; JSON output is left exact.
package display
