package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/tinehq/tine"
)

// readOnlyCommands only read the store: they never make a state
// directory, so a typo in --home or TINE_HOME is said, not answered with
// a fresh, empty store.
var readOnlyCommands = map[string]bool{
	"ls": true, "tree": true, "log": true, "diff": true, "path": true, "ps": true, "stats": true, "port": true,
	"logs": true, "pending": true, "events": true, "compare": true, "summary": true, "cost": true, "export": true,
	"judge stats": true, "cell show": true,
}

// errNoState is a read-only command's answer where the state directory
// does not exist (or is empty): nothing is under management there.
var errNoState = errors.New("nothing is under management there")

// noState returns errNoState, saying where, when this command only reads
// and the state directory holds nothing; nil otherwise.
func (a *app) noState() error {
	if !readOnlyCommands[a.cmd] {
		return nil
	}
	if entries, err := os.ReadDir(a.home); err == nil && len(entries) > 0 || err != nil && !os.IsNotExist(err) {
		return nil
	}
	return fmt.Errorf("no state directory at %s: %w (tine init DIR takes a directory under management; check --home or TINE_HOME): %w",
		a.home, errNoState, tine.ErrNotFound)
}
