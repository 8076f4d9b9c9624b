package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/tinehq/tine/confine"
	"github.com/tinehq/tine/sandbox/netproxy"
	"github.com/tinehq/tine/supervisor"
)

// Exit statuses of a command that could not be started inside a run, as a
// shell uses them.
const (
	ExitCannotRun = 126 // the sandbox could not be set up, or CMD is not executable
	ExitNotFound  = 127 // CMD was not found
)

// childName is argv[0] of the re-executed tine binary that sets a run up.
const childName = "tine-enter"

const specEnv = "_TINE_ENTER_SPEC"

// Spec says how to enter a run.
type Spec struct {
	View      string   // host path of the run's files; "" when they are at Workspace already
	Workspace string   // the workspace path
	Dir       string   // working directory inside the run
	Args      []string // the command and its arguments
	Env       []string // its environment

	// Confine, if set, confines the command (Landlock, seccomp) from its
	// first instruction; Hide, if set, are the mounts that keep the state
	// directory and other workspaces from it (supervisor.Cover).
	Confine *confine.Spec    `json:",omitempty"`
	Hide    *supervisor.Hide `json:",omitempty"`

	// Net, if set, gives the command a network of its own, held by its
	// policy (package netproxy), served by this process. If that network
	// cannot be set up (and only then: a command that cannot start fails
	// as itself), nothing has run yet, and Run calls NetFailed with why:
	// it says so, and returns nil for Run to run the command in this
	// process's network, or an error for Run to give up with
	// (ExitCannotRun). Without NetFailed, Run gives up. NetSetup is the
	// child's side of it (Run fills it in).
	Net       *netproxy.Proxy   `json:"-"`
	NetFailed func(error) error `json:"-"`
	NetSetup  *netproxy.Setup   `json:",omitempty"`

	// Terminal, if set, is the slave of a pseudo-terminal: the command's
	// standard streams and controlling terminal, leading a session of its
	// own (not sent to the child: it inherits it as its streams).
	Terminal *os.File `json:"-"`

	// Started, if set, is called with the command's process id once it
	// runs, and Exited once it has ended (not sent to the child).
	Started func(pid int) `json:"-"`
	Exited  func(pid int) `json:"-"`
	// Covered, if set, is called after Started with what the child's
	// mounts hid (supervisor.Cover's report), once they are in place (not
	// sent to the child, which writes the report to descriptor ReportFD).
	Covered  func(Cover) `json:"-"`
	ReportFD int         `json:",omitempty"`
}

// Cover is what a sandbox's mounts hid from its command: the paths, and
// how many other workspaces (not named: they may be other users').
type Cover struct {
	Hidden []string `json:"hidden,omitempty"`
	Others int      `json:"others,omitempty"`
}

// Run runs spec's command inside its run with this process's standard
// streams (or spec.Terminal), in a network of its own with spec.Net (else
// this process's), forwarding SIGINT, SIGTERM, SIGHUP and SIGQUIT to it, and
// returns its exit status (128+N when signal N killed it).
func Run(spec Spec) (int, error) {
	code, err, netErr := run(spec)
	if netErr == nil {
		return code, err
	}
	if spec.NetFailed == nil {
		return ExitCannotRun, fmt.Errorf("the run's network: %w", netErr)
	}
	if err := spec.NetFailed(netErr); err != nil {
		return ExitCannotRun, err
	}
	spec.Net, spec.NetSetup = nil, nil
	code, err, _ = run(spec)
	return code, err
}

// run is Run, but for a network that could not be set up (netErr: nothing
// ran yet).
func run(spec Spec) (code int, err, netErr error) {
	var extra []*os.File // the child's descriptors from 3 on
	var childNet *os.File
	if spec.Net != nil {
		if childNet, err = spec.Net.Pair(); err != nil {
			return 0, nil, err
		}
		defer childNet.Close()
		setup := spec.Net.Setup(3 + len(extra))
		spec.NetSetup, extra = &setup, append(extra, childNet)
	}
	var report, reportW *os.File
	if spec.Covered != nil {
		if report, reportW, err = os.Pipe(); err != nil {
			return ExitCannotRun, err, nil
		}
		defer report.Close()
		defer reportW.Close()
		spec.ReportFD, extra = 3+len(extra), append(extra, reportW)
	}
	cmd, err := command(spec)
	if err != nil {
		return ExitCannotRun, err, nil
	}
	cmd.ExtraFiles = extra
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if spec.Terminal != nil {
		cmd.Stdin, cmd.Stdout, cmd.Stderr = spec.Terminal, spec.Terminal, spec.Terminal
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil { // the namespaces, not the network: the child never ran
		if spec.Net != nil {
			spec.Net.Close()
		}
		return ExitCannotRun, fmt.Errorf("starting the run's namespace: %w", err), nil
	}
	if spec.Net != nil {
		childNet.Close()
		if err := spec.Net.Start(); err != nil { // the child exits, running nothing
			code, werr := wait(cmd)
			if errors.Is(err, netproxy.ErrEnded) { // it failed before its network, and said why
				return code, werr, nil
			}
			return 0, nil, err
		}
		defer spec.Net.Close()
	}
	if spec.Started != nil {
		spec.Started(cmd.Process.Pid)
	}
	if report != nil {
		reportW.Close()
		readCover(report, spec.Covered)
	}
	if spec.Exited != nil {
		defer spec.Exited(cmd.Process.Pid)
	}
	go func() {
		for s := range sigs {
			cmd.Process.Signal(s)
		}
	}()
	code, err = wait(cmd)
	return code, err, nil
}

// readCover reads the child's report of its mounts and gives it to
// covered; nothing when the child ended without one (it failed first, and
// says why).
func readCover(r *os.File, covered func(Cover)) {
	var c Cover
	if json.NewDecoder(r).Decode(&c) == nil {
		covered(c)
	}
}

// wait waits for cmd and returns its exit status (128+N when signal N
// killed it).
func wait(cmd *exec.Cmd) (int, error) {
	err := cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return ee.ExitCode(), nil
	}
	if err != nil {
		return ExitCannotRun, err
	}
	return 0, nil
}

// IsChild reports whether this process is the re-executed tine binary that
// must set a run up; main calls Child first thing when it is.
func IsChild() bool { return len(os.Args) > 0 && os.Args[0] == childName }

// Child sets up the run described in the environment and replaces itself
// with the command. It never returns: on failure it prints one line and
// exits with ExitCannotRun or ExitNotFound.
func Child() {
	var spec Spec
	if err := json.Unmarshal([]byte(os.Getenv(specEnv)), &spec); err != nil {
		fail(ExitCannotRun, "bad sandbox spec: %v", err)
	}
	code, err := enter(spec)
	fail(code, "%v", err)
}

func fail(code int, format string, args ...any) {
	fmt.Fprintf(os.Stderr, "tine exec: "+format+"\n", args...)
	os.Exit(code)
}

func encode(spec Spec) (string, error) {
	b, err := json.Marshal(spec)
	return string(b), err
}
