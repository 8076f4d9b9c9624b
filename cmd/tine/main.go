// Command tine forks a live agent workspace into copy-on-write branches.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/errcode"
	"github.com/tinehq/tine/internal/buildinfo"
	progressline "github.com/tinehq/tine/internal/progress"
	"github.com/tinehq/tine/sandbox"
	"github.com/tinehq/tine/supervisor"
)

// Exit statuses, errcode's under the short names the commands use;
// docs/cli.md lists them for users.
const (
	exitOK          = errcode.ExitOK
	exitError       = errcode.ExitError
	exitUsage       = errcode.ExitUsage
	exitNotFound    = errcode.ExitNotFound
	exitExists      = errcode.ExitExists
	exitState       = errcode.ExitState
	exitUnmerged    = errcode.ExitUnmerged
	exitUnsupported = errcode.ExitUnsupported
	exitBusy        = errcode.ExitBusy
	exitConflict    = errcode.ExitConflict
	exitStore       = errcode.ExitStore
	exitFiled       = errcode.ExitFiled
	exitInterrupted = errcode.ExitInterrupted
)

// exitCode maps an error to its exit status: the one a command chose
// (exitErr), else errcode's for the sentinel it wraps.
func exitCode(err error) int {
	var ee exitErr
	if errors.As(err, &ee) {
		return ee.code
	}
	return errcode.Exit(err)
}

// exitErr carries an exit status chosen by a command (tine exec passes
// its command's through) and, optionally, no message.
type exitErr struct {
	code int
	err  error
}

// Unwrap returns the error exitErr carries, so its kind still shows (an
// interrupted command's JSON error says "interrupted").
func (e exitErr) Unwrap() error { return e.err }

func (e exitErr) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}

func main() {
	if sandbox.IsChild() {
		sandbox.Child()
	}
	if supervisor.IsSupervisor() {
		supervisor.Main()
	}
	closeStrayOnExec()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes the command line args and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	c, err := root.ExecuteC()
	if u := cobraUsage(c, err); u != nil {
		err = u
	}
	err = needsDaemon(err)
	if err != nil && err.Error() != "" {
		printError(stderr, err, wantsJSON(args))
	}
	return exitCode(err)
}

// app is what every command shares.
type app struct {
	home    string
	homeSet bool   // --home given: this state directory, never the system daemon's
	cmd     string // the command below tine ("cell run")
	stdout  io.Writer
	stderr  io.Writer

	remoteOnce sync.Once
	isRemote   bool
	inRun      bool // inside a run: its daemon (TINE_SOCKET), signing with its capability

	line *progressline.Line // the progress line of the command's long step, on a terminal
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	a := &app{stdout: stdout, stderr: stderr}
	root := &cobra.Command{
		Use:   "tine",
		Short: "Fork a live agent workspace into copy-on-write branches",
		Long: `tine forks a workspace (a project directory) into runs that each see their own
copy-on-write view of it at the same absolute path, records versions you can
roll back to, and discards what you do not keep.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       buildinfo.Read().Short(), // for --version
	}
	root.SetVersionTemplate(buildinfo.Read().String() + "\n")
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(flagError)
	root.PersistentFlags().StringVar(&a.home, "home", defaultHome(), "state directory (env TINE_HOME)")
	root.PersistentPreRun = func(c *cobra.Command, _ []string) {
		a.homeSet, a.cmd = c.Flags().Changed("home"), cmdPath(c)
		warnDeprecated(c, stderr)
	}
	for _, c := range []func(*app) *cobra.Command{
		newInit, newRelease, newFork, newExec, newShell, newPath, newLs, newTree, newLog,
		newDiff, newCheckpoint, newRollback, newDiscard,
		newMerge, newCombine, newPromote, newCompare, newChoose,
		newStart, newStop, newPs, newStats, newPort, newScreen, newInput, newLogs, newGC, newServe,
		newApprove, newRefuse, newPending, newForkSelf, newRequest, newEffect, newCell, newEvents, newExport,
		newHook, newSetup, newMCP, newForkRun, newSubmit, newTasks, newFetch, newController, newJudge, newSummary, newCost, newDemo, newDemoAgent, newDoctor,
		newVersion, newDashboard,
	} {
		root.AddCommand(c(a))
	}
	refuseUnknownSubcommands(root)
	groupCommands(root)
	registerCompletions(root, a)
	versionFlag(root)
	return root
}

// defaultHome is $TINE_HOME, else /var/lib/tine for root, else
// $XDG_DATA_HOME/tine (~/.local/share/tine).
func defaultHome() string {
	if h := os.Getenv("TINE_HOME"); h != "" {
		return h
	}
	if os.Geteuid() == 0 {
		return "/var/lib/tine"
	}
	if x := os.Getenv("XDG_DATA_HOME"); x != "" {
		return filepath.Join(x, "tine")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".local", "share", "tine")
}

// withEngine runs fn with an open engine, opened with extra options too.
//
// A normal user working through the system daemon has no store to open:
// a command that does not go through it says so.
func (a *app) withEngine(ctx context.Context, fn func(*engine.Engine) error, extra ...engine.Option) error {
	if a.remote() {
		if a.inRun {
			return a.insideRun()
		}
		return fmt.Errorf("tine %s does not go through the tine daemon; TINE_HOME=DIR tine %s uses a state directory of your own: %w",
			a.cmd, a.cmd, tine.ErrUnsupported)
	}
	e, err := a.open(ctx, extra...)
	if err != nil {
		return err
	}
	defer e.Close()
	defer a.emptyTrashLater(e)
	return fn(e)
}

// printJSON writes v as indented JSON; an empty list is [], never null.
func (a *app) printJSON(v any) error {
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Slice && rv.IsNil() {
		v = []struct{}{}
	}
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// cmdPath is c's command below tine ("cell run"), as errors name it.
func cmdPath(c *cobra.Command) string {
	return strings.TrimPrefix(c.CommandPath(), c.Root().Name()+" ")
}

// exactArgs is cobra.ExactArgs with a usage error that maps to exitUsage.
func exactArgs(n int) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) != n {
			return fmt.Errorf("%s takes %d argument(s), got %d (see %s --help): %w", cmdPath(c), n, len(args), c.CommandPath(), tine.ErrInvalid)
		}
		return nil
	}
}

// minArgs is cobra.MinimumNArgs with a usage error that says what the
// arguments are (what: "RUN, then -- and the command").
func minArgs(n int, what string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) < n {
			return usageErr(c, cmdPath(c)+" takes "+what)
		}
		return nil
	}
}

// maxArgs bounds the positional arguments, with a usage error.
func maxArgs(n int) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) > n {
			return fmt.Errorf("%s takes at most %d argument(s), got %d (see %s --help): %w", cmdPath(c), n, len(args), c.CommandPath(), tine.ErrInvalid)
		}
		return nil
	}
}

// usageErr is a command-line mistake: exit status 2.
func usageErr(c *cobra.Command, msg string) error {
	return fmt.Errorf("%s (see %s --help): %w", msg, c.CommandPath(), tine.ErrInvalid)
}
