package httpapi

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/capability"
	"github.com/tinehq/tine/errcode"
	"github.com/tinehq/tine/forkrun"
)

// Client calls the API over the daemon's unix socket, signing each
// request with a run's capability when it has one (from inside a run).
type Client struct {
	hc   *http.Client
	cap  *capability.Capability
	over Doer // when set, every request goes through it instead
}

// Doer sends one request to the daemon, as Client.Do and Client.Text do.
type Doer interface {
	Do(ctx context.Context, method, path string, body, out any) (int, error)
	Text(ctx context.Context, path string, limit int) (string, int64, error)
}

// Over returns a client whose requests go through d, with the typed
// methods of every client: mcp's, which signs each request with its run's
// newest capability, or a test's fake.
func Over(d Doer) *Client { return &Client{over: d} }

// NewClient returns a client of the daemon listening on socket; c, if not
// nil, signs every request.
func NewClient(socket string, c *capability.Capability) *Client {
	wait := time.Duration(0)
	if c != nil {
		wait = runSocketWait
	}
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return dialUnix(ctx, socket, wait)
	}}
	return &Client{hc: &http.Client{Transport: tr, Timeout: 10 * time.Minute}, cap: c}
}

// waiting returns c with requests bounded by d instead of the usual
// bound, when d is longer: for calls that last as long as a command.
func (c *Client) waiting(d time.Duration) *Client {
	if c.hc == nil || d <= c.hc.Timeout {
		return c
	}
	cp, hc := *c, *c.hc
	hc.Timeout = d
	cp.hc = &hc
	return &cp
}

// SystemSocket is where the system daemon (tine serve --system, as root)
// serves every local user, each as themselves.
const SystemSocket = "/run/tine/tine.sock"

// runSocketWait is how long a client inside a run waits for its run's
// socket to appear: the daemon makes it a moment after the run starts.
const runSocketWait = 5 * time.Second

// dialUnix dials socket, retrying for up to wait while it does not exist
// or nobody listens on it yet.
func dialUnix(ctx context.Context, socket string, wait time.Duration) (net.Conn, error) {
	deadline := time.Now().Add(wait)
	for {
		var d net.Dialer
		c, err := d.DialContext(ctx, "unix", socket)
		if err == nil || time.Now().After(deadline) || !(errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED)) {
			return c, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Text GETs path and returns up to limit bytes of its body as text, with
// the body's whole length (a patch can be large).
func (c *Client) Text(ctx context.Context, path string, limit int) (string, int64, error) {
	if c.over != nil {
		return c.over.Text(ctx, path, limit)
	}
	req, err := c.request(ctx, http.MethodGet, path, nil, false)
	if err != nil {
		return "", 0, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return "", 0, &NoAnswerError{Err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return "", 0, answerErr(resp.Status, b)
	}
	var b bytes.Buffer
	n, err := io.Copy(&b, io.LimitReader(resp.Body, int64(limit)))
	if err == nil {
		var rest int64
		rest, err = io.Copy(io.Discard, resp.Body)
		n += rest
	}
	return b.String(), n, err
}

// request builds a request of body (raw JSON, hasBody), signed with the
// client's capability when it has one.
func (c *Client) request(ctx context.Context, method, path string, raw []byte, hasBody bool) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://tine"+path, bytes.NewReader(raw))
	if err != nil || c.cap == nil {
		return req, err
	}
	var args any // signed as null with no body
	if hasBody {
		args = json.RawMessage(raw)
	}
	signed, err := capability.Sign(*c.cap, capability.PurposeControl, method+" "+req.URL.Path, args, time.Now())
	if err != nil {
		return nil, err
	}
	h, _ := json.Marshal(signed)
	req.Header.Set(RequestHeader, base64.RawURLEncoding.EncodeToString(h))
	return req, nil
}

// NoAnswerError is a request that got no (whole) answer: the daemon is
// not there, or went away while it worked. The request may or may not have
// taken effect.
type NoAnswerError struct{ Err error }

func (e *NoAnswerError) Error() string {
	if errors.Is(e.Err, syscall.EPERM) {
		return "the tine daemon: " + e.Err.Error() + sandboxed
	}
	return "the tine daemon: " + e.Err.Error()
}

// sandboxed explains a socket refused with EPERM: not the socket's mode
// (EACCES) but a sandbox's seccomp filter, Codex's above all.
const sandboxed = " (a sandbox around this process refuses sockets, as Codex's does: call the tine MCP server's tools instead, which `tine setup codex` adds and Codex runs outside its sandbox, or run this outside the sandbox)"

// Unwrap returns the transport's error.
func (e *NoAnswerError) Unwrap() error { return e.Err }

// answerErr turns an error answer into an error with the daemon's message
// that unwraps to the sentinel its code names.
// AnswerError is the error an answer of the daemon with status and body b
// stands for, wrapping its sentinel (for clients that read answers
// themselves, as tine exec's attach does).
func AnswerError(status string, b []byte) error { return answerErr(status, b) }

func answerErr(status string, b []byte) error {
	var e Error
	if json.Unmarshal(b, &e) != nil || e.Error == "" {
		return fmt.Errorf("the tine daemon answered %s", status)
	}
	var err error = errors.New(e.Error)
	if s := errcode.Sentinel(e.Code); s != nil {
		err = wrapped{msg: e.Error, err: s}
	}
	if len(e.Parts) > 0 {
		err = tine.NewOptionError(e.Parts, err)
	}
	return err
}

// Do sends body (JSON) with method to path and decodes the answer into
// out. An error answer is returned as an error wrapping the sentinel its
// code names, so callers map it to exit statuses as the engine's own. The
// status code is returned too (202 means an approval is pending).
func (c *Client) Do(ctx context.Context, method, path string, body, out any) (int, error) {
	if c.over != nil {
		return c.over.Do(ctx, method, path, body, out)
	}
	var raw []byte
	if body != nil {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			return 0, err
		}
	}
	req, err := c.request(ctx, method, path, raw, body != nil)
	if err != nil {
		return 0, err
	}
	req, answered := c.interruptible(req)
	resp, err := c.hc.Do(req)
	if err != nil {
		if cause := answered(); errors.Is(cause, ErrNotInterrupted) {
			return 0, cause
		}
		return 0, &NoAnswerError{Err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if cause := answered(); err != nil && errors.Is(cause, ErrNotInterrupted) {
		return resp.StatusCode, cause
	}
	if err != nil {
		return resp.StatusCode, &NoAnswerError{Err: err}
	}
	if resp.StatusCode >= 400 {
		var partial struct {
			Result json.RawMessage `json:"result"`
		}
		if out != nil && json.Unmarshal(b, &partial) == nil && len(partial.Result) > 0 {
			json.Unmarshal(partial.Result, out) // e.g. a merge's plan with its conflicts
		}
		return resp.StatusCode, answerErr(resp.Status, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return resp.StatusCode, fmt.Errorf("the tine daemon's answer: %w", err)
		}
	}
	return resp.StatusCode, nil
}

// CodedError is an error with message msg that unwraps to the sentinel
// code names (package errcode), or to none for an unknown code: an error
// the daemon recorded rather than answered (a fork-run's, in its report).
func CodedError(msg, code string) error {
	if s := errcode.Sentinel(code); s != nil {
		return wrapped{msg: msg, err: s}
	}
	return errors.New(msg)
}

// wrapped is an API error message that unwraps to its sentinel.
type wrapped struct {
	msg string
	err error
}

func (w wrapped) Error() string { return w.msg }
func (w wrapped) Unwrap() error { return w.err }

// ForkRun starts a fork-run of run ref in the daemon (POST
// /v1/runs/{ref}/fork-run); it returns once the forks exist. Follow it
// with ForkRunReport.
func (c *Client) ForkRun(ctx context.Context, ref string, req forkrun.Request) (*ForkRunStarted, error) {
	var out ForkRunStarted
	if _, err := c.Do(ctx, http.MethodPost, runPath(ref, "fork-run"), req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ForkRunReport returns the report of group's fork-run: live while the
// daemon runs it, else as stored. A group without a fork-run is an error
// wrapping tine.ErrNotFound.
func (c *Client) ForkRunReport(ctx context.Context, group string) (*forkrun.Report, error) {
	var out forkrun.Report
	if _, err := c.Do(ctx, http.MethodGet, groupPath(group, "report"), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// CancelForkRun cancels group's fork-run running in the daemon: its agents
// are killed, its forks kept. It returns without waiting for the end.
func (c *Client) CancelForkRun(ctx context.Context, group string) (*ForkRunCanceled, error) {
	var out ForkRunCanceled
	if _, err := c.Do(ctx, http.MethodPost, groupPath(group, "cancel"), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
