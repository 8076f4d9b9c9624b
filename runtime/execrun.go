package runtime

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/internal/account"
	"github.com/tinehq/tine/internal/runenv"
	"github.com/tinehq/tine/supervisor"
)

// MaxOutput bounds how much of a command's output ExecCapture keeps: the
// tail, where errors and test summaries are.
const MaxOutput = 64 << 10

// ExecResult is a command run to its end inside a run.
type ExecResult struct {
	Run       string   `json:"run"`
	Args      []string `json:"args"`
	Exit      int      `json:"exit"`
	Stdout    string   `json:"stdout"` // the last MaxOutput bytes
	Stderr    string   `json:"stderr"`
	Truncated bool     `json:"truncated,omitempty"`
	Seconds   float64  `json:"seconds"`
	TimedOut  bool     `json:"timed_out,omitempty"`
	Killed    bool     `json:"killed,omitempty"` // by ExecOptions.Kill or the context
}

// ExecOptions says how to run a command inside a run with [Engine.ExecWith].
type ExecOptions struct {
	Args []string
	Env  []string // added to the run's environment, after it; kept even where they are secrets of the run (an account's own)
	// Dir is the directory the command starts in, relative to the
	// workspace path and below it; empty: the workspace path.
	Dir string
	// Base, when not nil, is the environment the command's is made from,
	// the workspace owner's (a caller's of the daemon); nil: this
	// process's own.
	Base []string
	// Stdout and Stderr, when set, receive the output as it comes, besides
	// the tails kept in the result.
	Stdout, Stderr io.Writer
	// Timeout, when positive, kills the command's whole process tree once
	// it has run that long.
	Timeout time.Duration
	// Kill, when closed, kills the command's whole process tree.
	Kill <-chan struct{}
	// Started, when set, is called with the command's pid inside the run.
	Started func(pid int)
}

// ExecCapture runs args inside run ref (through its supervisor, launched if
// needed) at the workspace path, with no input, and returns its exit status
// and the tail of its output. Past timeout (0: none) its process tree is
// killed. Needs root, as supervisors do.
func (m *Manager) ExecCapture(ctx context.Context, ref string, args []string, timeout time.Duration) (*ExecResult, error) {
	return m.ExecWith(ctx, ref, ExecOptions{Args: args, Timeout: timeout})
}

// ExecWith runs a command inside run ref (through its supervisor, launched
// if needed) at the workspace path, with no input, as a process tree of its
// own: when it ends, what it left running is killed, and a timeout, a
// closed o.Kill or a cancelled ctx kill all of it. It returns the exit
// status and the tails of the output. Needs root, as supervisors do.
func (m *Manager) ExecWith(ctx context.Context, ref string, o ExecOptions) (*ExecResult, error) {
	if len(o.Args) == 0 {
		return nil, fmt.Errorf("exec needs a command: %w", tine.ErrInvalid)
	}
	if o.Dir != "" && !filepath.IsLocal(o.Dir) {
		return nil, fmt.Errorf("exec directory %q is not below the workspace: %w", o.Dir, tine.ErrInvalid)
	}
	r, cl, err := m.Client(ctx, ref)
	if err != nil {
		return nil, err
	}
	base, from := os.Environ(), os.Getuid()
	if o.Base != nil {
		base, from = o.Base, r.Workspace.UID
	}
	env := account.Setenv(runenv.For(r.Workspace, r.Run, base, from), o.Env...)
	x := supervisor.Exec{Args: o.Args, Env: env, Dir: filepath.Join(r.Workspace.Path, o.Dir), Tree: true, Grant: envNames(o.Env)}
	out, errOut := &tail{max: MaxOutput}, &tail{max: MaxOutput}
	res := &ExecResult{Run: r.Run.Name, Args: o.Args}
	t0 := time.Now()
	code, err := m.runCaptured(ctx, cl, x, o, writers(out, o.Stdout), writers(errOut, o.Stderr), res)
	res.Exit, res.Seconds = code, time.Since(t0).Seconds()
	res.Stdout, res.Stderr = out.String(), errOut.String()
	res.Truncated = out.cut || errOut.cut
	return res, err
}

func writers(t *tail, w io.Writer) io.Writer {
	if w == nil {
		return t
	}
	return io.MultiWriter(t, w)
}

func (m *Manager) runCaptured(ctx context.Context, cl *supervisor.Client, x supervisor.Exec, o ExecOptions, out, errOut io.Writer, res *ExecResult) (int, error) {
	null, err := os.Open(os.DevNull)
	if err != nil {
		return 0, err
	}
	defer null.Close()
	or, ow, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	er, ew, err := os.Pipe()
	if err != nil {
		or.Close()
		ow.Close()
		return 0, err
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); io.Copy(out, or); or.Close() }()
	go func() { defer wg.Done(); io.Copy(errOut, er); er.Close() }()
	sigs := make(chan os.Signal, 1) // one SIGKILL at most
	stop, watched := make(chan struct{}), make(chan struct{})
	kill := func(timedOut bool) {
		res.TimedOut, res.Killed = timedOut, !timedOut
		sigs <- syscall.SIGKILL
	}
	var timeout <-chan time.Time
	if o.Timeout > 0 {
		t := time.NewTimer(o.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	go func() {
		defer close(watched)
		select {
		case <-timeout:
			kill(true)
		case <-o.Kill:
			kill(false)
		case <-ctx.Done():
			kill(false)
		case <-stop:
		}
	}()
	code, err := cl.Exec(context.WithoutCancel(ctx), x, [3]*os.File{null, ow, ew}, sigs, o.Started)
	close(stop)
	<-watched
	ow.Close()
	ew.Close()
	drain(&wg, or, er)
	return code, err
}

// outputGrace is how long output may still arrive once a command ended:
// a process that escaped its tree (a double fork into a session of its
// own) may hold the streams open forever.
const outputGrace = 2 * time.Second

// drain waits for the output copiers, closing the read ends after
// outputGrace.
func drain(wg *sync.WaitGroup, readers ...*os.File) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(outputGrace):
		for _, r := range readers {
			r.Close()
		}
		<-done
	}
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
	cut bool
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(p)
	if over := t.buf.Len() - t.max; over > 0 {
		t.buf.Next(over)
		t.cut = true
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.String()
}

// envNames returns the names of env's variables.
func envNames(env []string) []string {
	out := make([]string, len(env))
	for i, kv := range env {
		out[i], _, _ = strings.Cut(kv, "=")
	}
	return out
}
