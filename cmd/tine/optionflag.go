package main

import (
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

// flagOf names an option of a request as the flag that sets it: a scope
// by its own flag (--git, --filesystem, --paths), another value as
// --field=value.
func flagOf(o tine.Option) string {
	f, ok := flagNames[o.Field]
	if !ok {
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
		return tine.JoinParts(parts, flagOf)
	}
	return err.Error()
}
