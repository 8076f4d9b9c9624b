package main

import (
	"errors"
	"strings"

	"github.com/tinehq/tine"
)

// flagNames are the flags of the API's options whose flag is not the
// field with - for _ (the API's one prompt is two flags here).
var flagNames = map[string]string{
	"holdout":    "--holdout-test",
	"regression": "--regression-test",
	"n":          "-n",
	"prompt":     "--prompt or --prompt-file",
}

// forceFlag names the API's one force by what the refusal err says it
// would override: commands running in the target (--while-running) or
// work never merged or promoted (--unmerged).
func forceFlag(err error) string {
	if errors.Is(err, tine.ErrBusy) {
		return "--while-running"
	}
	return "--unmerged"
}

// flagOf names an option of a request, in the refusal err, as the flag
// that sets it: a scope by its own flag (--git, --filesystem, --paths),
// force by what it overrides, another value as --field=value.
func flagOf(o tine.Option, err error) string {
	f, ok := flagNames[o.Field]
	switch {
	case o.Field == "force":
		f = forceFlag(err)
	case !ok:
		f = "--" + strings.ReplaceAll(o.Field, "_", "-")
	}
	switch {
	case o.Field == "scope":
		return "--" + o.Value
	case o.Value != "":
		return f + "=" + o.Value
	}
	return f
}

// message is err's line as the CLI prints it: the options of the request
// it names (tine.OptionError) said as this command line's flags.
func message(err error) string {
	if parts := tine.OptionParts(err); parts != nil {
		return tine.JoinParts(parts, func(o tine.Option) string { return flagOf(o, err) })
	}
	return err.Error()
}
