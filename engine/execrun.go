package engine

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/tinehq/tine"
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
}

// ExecCapture runs args inside run ref (through its supervisor, launched if
// needed) at the workspace path, with no input, and returns its exit status
// and the tail of its output. Past timeout (0: none) its process group is
// killed. Needs root, as supervisors do.
func (e *Engine) ExecCapture(ctx context.Context, ref string, args []string, timeout time.Duration) (*ExecResult, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("exec needs a command: %w", tine.ErrInvalid)
	}
	r, cl, err := e.Client(ctx, ref)
	if err != nil {
		return nil, err
	}
	env := append(append(os.Environ(), RunEnv(r)...), supervisor.InsideEnv(os.Getenv("PATH"))...)
	x := supervisor.Exec{Args: args, Env: env, Dir: r.Workspace.Path}
	out, errOut := &tail{max: MaxOutput}, &tail{max: MaxOutput}
	res := &ExecResult{Run: r.Run.Name, Args: args}
	t0 := time.Now()
	code, err := e.runCaptured(ctx, cl, x, out, errOut, timeout, res)
	res.Exit, res.Seconds = code, time.Since(t0).Seconds()
	res.Stdout, res.Stderr = out.String(), errOut.String()
	res.Truncated = out.cut || errOut.cut
	return res, err
}

func (e *Engine) runCaptured(ctx context.Context, cl *supervisor.Client, x supervisor.Exec, out, errOut *tail, timeout time.Duration, res *ExecResult) (int, error) {
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
	sigs := make(chan os.Signal, 1)
	if timeout > 0 {
		timer := time.AfterFunc(timeout, func() { res.TimedOut = true; sigs <- syscall.SIGKILL })
		defer timer.Stop()
	}
	code, err := cl.Exec(context.WithoutCancel(ctx), x, [3]*os.File{null, ow, ew}, sigs, nil)
	ow.Close()
	ew.Close()
	wg.Wait()
	return code, err
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
