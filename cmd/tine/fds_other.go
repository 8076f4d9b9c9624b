//go:build !linux

package main

// closeStrayOnExec does nothing off Linux.
func closeStrayOnExec() {}
