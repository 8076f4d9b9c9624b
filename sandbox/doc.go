// Package sandbox runs a command inside a run: in a private mount namespace
// where the run's files are mounted at the workspace path, so every run sees
// its own files at the same absolute path.
package sandbox
