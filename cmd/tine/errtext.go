package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/errcode"
	"github.com/tinehq/tine/internal/display"
	"github.com/tinehq/tine/internal/lazyre"
	"github.com/tinehq/tine/merge"
)

// An error is printed once, as one line a person reads: the sentence the
// code wrote, without the category its sentinel adds (": invalid
// argument", ": not found"), which the exit status carries already, and
// without Go's own words (strconv's, context's). Under --json it is one
// JSON object on stderr instead (printError).

// categoryTails are the texts the sentinels add when wrapped with %w.
var categoryTails = func() []string {
	var out []string
	for _, s := range []error{tine.ErrNotFound, tine.ErrExists, tine.ErrInvalid, tine.ErrState, tine.ErrUnmerged,
		tine.ErrPrivilege, tine.ErrUnsupported, tine.ErrBusy, tine.ErrStore, merge.ErrConflict} {
		out = append(out, s.Error())
	}
	return out
}()

// goWords are Go's texts that say nothing to a person, and what to say.
var goWords = strings.NewReplacer(
	"context canceled", "interrupted",
	"context deadline exceeded", "timed out",
)

// newlines are the line breaks of a message of several lines, with the
// blanks around them.
var newlines = lazyre.New(`[ \t]*\n[ \t\n]*`)

// errLine is err as the one line the CLI prints (without "tine: ").
func errLine(err error) string {
	s := goWords.Replace(message(err))
	s = newlines().ReplaceAllString(strings.TrimSpace(s), " ")
	return stripTails(s)
}

// stripTails drops each ": <sentinel>" that ends s or a clause of it
// (before ";", ")" or ","), unless what is left would be a bare word.
func stripTails(s string) string {
	for prev := ""; s != prev; {
		prev = s
		s = stripTailsOnce(s)
	}
	return s
}

func stripTailsOnce(s string) string {
	for _, t := range categoryTails {
		tail := ": " + t
		for from := 0; ; {
			i := strings.Index(s[from:], tail)
			if i < 0 {
				break
			}
			i += from
			end := i + len(tail)
			if (end == len(s) || strings.ContainsRune(";),", rune(s[end]))) && strings.Contains(s[:i], " ") {
				s = s[:i] + s[end:]
				from = i
				continue
			}
			from = end
		}
	}
	return s
}

// errJSON is an error under --json: its line, its code (errcode's names,
// "store" for an unusable store) and the exit status.
type errJSON struct {
	Error string `json:"error"`
	Code  string `json:"code"`
	Exit  int    `json:"exit"`
}

// printError writes err to w: one line, or one JSON object when the
// command line asked for --json.
func printError(w io.Writer, err error, asJSON bool) {
	line := errLine(err)
	if !asJSON {
		// An error may name what a run controls (a path, a run name):
		// its control characters are shown, never sent to the terminal.
		fmt.Fprintf(w, "tine: %s\n", display.Block(line))
		return
	}
	code := errcode.Of(err).Code
	if errors.Is(err, tine.ErrStore) {
		code = "store"
	} else if errors.Is(err, context.Canceled) {
		code = "interrupted"
	}
	b, _ := json.Marshal(errJSON{Error: line, Code: code, Exit: exitCode(err)})
	fmt.Fprintf(w, "%s\n", b)
}

// wantsJSON says whether the command line asks for --json (before any --).
func wantsJSON(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "--json", "--json=true", "--json=1":
			return true
		}
	}
	return false
}

// flagError turns pflag's error about c's flags into one line that names
// the flag as it was typed, the value and what it should be.
func flagError(c *cobra.Command, err error) error {
	var (
		iv *pflag.InvalidValueError
		ne *pflag.NotExistError
		vr *pflag.ValueRequiredError
	)
	msg := err.Error()
	switch {
	case errors.As(err, &iv):
		msg = fmt.Sprintf("%s %q: %s", flagName(iv.GetFlag()), iv.GetValue(), valueWant(iv.GetFlag(), iv.Unwrap()))
	case errors.As(err, &ne) && ne.GetSpecifiedShortnames() != "":
		msg = fmt.Sprintf("unknown flag -%c", ne.GetSpecifiedName()[0])
	case errors.As(err, &ne):
		msg = "unknown flag --" + ne.GetSpecifiedName()
	case errors.As(err, &vr) && vr.GetSpecifiedShortnames() != "":
		msg = fmt.Sprintf("-%c needs a value", vr.GetSpecifiedName()[0])
	case errors.As(err, &vr):
		msg = "--" + vr.GetSpecifiedName() + " needs a value"
	}
	return usageErr(c, msg)
}

// flagName is f as help lists it: -n/--copies, or --name.
func flagName(f *pflag.Flag) string {
	if f.Shorthand != "" {
		return "-" + f.Shorthand + "/--" + f.Name
	}
	return "--" + f.Name
}

// valueWant says what a flag of f's type takes, in place of strconv's or
// time's error; a flag type of tine's own says it itself (cause).
func valueWant(f *pflag.Flag, cause error) string {
	switch t := f.Value.Type(); {
	case strings.HasPrefix(t, "int") || strings.HasPrefix(t, "uint"):
		return "not a whole number"
	case strings.HasPrefix(t, "float"):
		return "not a number"
	case t == "bool":
		return "not true or false"
	case t == "duration":
		return "not a duration (such as 90s, 5m or 1h30m)"
	}
	return stripGoPrefix(cause.Error())
}

// goPrefix matches the package prefix of a standard library error
// ("strconv.ParseInt: parsing \"x\": ").
var goPrefix = lazyre.New(`^[a-z]+\.[A-Za-z]+: (parsing "[^"]*": )?`)

func stripGoPrefix(s string) string { return goPrefix().ReplaceAllString(s, "") }

// cobraUsage rewrites a command-line error cobra makes itself (an unknown
// command, flags that exclude each other, a missing required flag) as one
// line naming c's --help; it returns nil for any other error.
func cobraUsage(c *cobra.Command, err error) error {
	if err == nil || errors.Is(err, tine.ErrInvalid) {
		return nil
	}
	first, rest, _ := strings.Cut(err.Error(), "\n")
	switch {
	case strings.HasPrefix(first, "unknown command"):
		name, _, _ := strings.Cut(strings.TrimPrefix(first, "unknown command "), " for ")
		msg := "unknown command " + name
		if s := strings.Fields(strings.ReplaceAll(rest, "Did you mean this?", "")); len(s) > 0 {
			msg += "; did you mean " + strings.Join(s, " or ") + "?"
		}
		return usageErr(c, msg)
	case strings.HasPrefix(first, "if any flags in the group"):
		return usageErr(c, exclusiveFlags(first))
	case strings.HasPrefix(first, "required flag"), strings.HasPrefix(first, "accepts "),
		strings.HasPrefix(first, "requires at least"), strings.HasPrefix(first, "invalid argument"):
		return usageErr(c, first)
	}
	return nil
}

// groupFlags matches the flags cobra's flag-group errors list ("[json patch]").
var groupFlags = lazyre.New(`\[([^\]]*)\] were all set`)

// exclusiveFlags says which flags of a mutually exclusive group were given.
func exclusiveFlags(msg string) string {
	m := groupFlags().FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	names := strings.Fields(m[1])
	for i, n := range names {
		names[i] = "--" + n
	}
	return strings.Join(names, " and ") + " cannot be used together"
}

// refuseUnknownSubcommands makes each command of root that only groups
// others (tine cell) refuse an unknown subcommand, as cobra does for root
// alone, rather than print its help and exit 0.
func refuseUnknownSubcommands(root *cobra.Command) {
	for _, c := range root.Commands() {
		if !c.HasSubCommands() {
			continue
		}
		refuseUnknownSubcommands(c)
		if c.Run == nil && c.RunE == nil {
			c.Args = func(c *cobra.Command, args []string) error {
				if len(args) == 0 {
					return nil
				}
				msg := fmt.Sprintf("unknown command %q", args[0])
				if s := c.SuggestionsFor(args[0]); len(s) > 0 {
					msg += "; did you mean " + strings.Join(s, " or ") + "?"
				}
				return usageErr(c, msg)
			}
			c.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
		}
	}
}
