package effect

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// outputTail bounds the output a receipt keeps.
const outputTail = 4 << 10

// Timeout bounds one effect.
const Timeout = 2 * time.Minute

// PlanFor turns r, asked for in the source whose files are at dir, into
// the plan a person approves: for a push, the remote's URL, the commit the
// refspec's source names now and the remote ref; for a request, its body's
// digest. git runs as cred (nil: as tine) with env.
func PlanFor(ctx context.Context, r Request, dir string, cred *syscall.Credential, env []string) (Plan, error) {
	p := Plan{Request: r, Dir: dir}
	switch r.Kind {
	case GitPush:
		if p.Remote == "" {
			p.Remote = "origin"
		}
		git := func(args ...string) (string, error) { return gitOut(ctx, dir, cred, env, args...) }
		var err error
		if p.RemoteURL, err = git("remote", "get-url", "--push", p.Remote); err != nil {
			return p, fmt.Errorf("git-push: remote %q: %w", p.Remote, err)
		}
		if p.Refspec == "" {
			branch, err := git("symbolic-ref", "--short", "HEAD")
			if err != nil {
				return p, fmt.Errorf("git-push: no branch checked out: say what to push")
			}
			p.Refspec = branch
		}
		src, dst, _ := strings.Cut(strings.TrimPrefix(p.Refspec, "+"), ":")
		if dst == "" {
			dst = src
		}
		if p.Commit, err = git("rev-parse", "--verify", src+"^{commit}"); err != nil {
			return p, fmt.Errorf("git-push: %q names no commit: %w", src, err)
		}
		if !strings.HasPrefix(dst, "refs/") {
			dst = "refs/heads/" + dst
		}
		p.Dest = dst
	case HTTP:
		sum := sha256.Sum256([]byte(r.Body))
		p.BodySHA256 = hex.EncodeToString(sum[:])
	}
	return p, nil
}

// Do carries out plan p (approved as approval) and returns its receipt:
// the push of exactly the planned commit, the request, or the command. It
// never fails; a failure is in the receipt.
func Do(ctx context.Context, p Plan, approval string, cred *syscall.Credential, env []string) Receipt {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	rec := Receipt{Kind: p.Kind, Key: KeyOf(p), Approval: approval, Time: time.Now().UTC()}
	switch p.Kind {
	case GitPush:
		// The commit approved, not whatever the refspec names by now.
		spec := p.Commit + ":" + p.Dest
		if strings.HasPrefix(p.Refspec, "+") {
			spec = "+" + spec
		}
		out, code, err := run(ctx, p.Dir, cred, env, "git", "push", "--porcelain", p.Remote, spec)
		rec.Status, rec.Output, rec.OK = code, out, err == nil && code == 0
		if err != nil {
			rec.Error = err.Error()
		}
	case HTTP:
		doHTTP(ctx, p, &rec)
	case Run:
		out, code, err := run(ctx, p.Dir, cred, env, p.Args[0], p.Args[1:]...)
		rec.Status, rec.Output, rec.OK = code, out, err == nil && code == 0
		if err != nil {
			rec.Error = err.Error()
		}
	}
	return rec
}

func doHTTP(ctx context.Context, p Plan, rec *Receipt) {
	req, err := http.NewRequestWithContext(ctx, p.Method, p.URL, strings.NewReader(p.Body))
	if err != nil {
		rec.Error = err.Error()
		return
	}
	req.Header.Set("Idempotency-Key", rec.Key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		rec.Error = err.Error()
		return
	}
	defer resp.Body.Close()
	h := sha256.New()
	var tail bytes.Buffer
	io.Copy(io.MultiWriter(h, &limited{&tail, outputTail}), resp.Body)
	rec.Status, rec.OK = resp.StatusCode, resp.StatusCode/100 == 2
	rec.BodySHA256, rec.Output = hex.EncodeToString(h.Sum(nil)), tail.String()
}

// limited keeps the first n bytes written to it.
type limited struct {
	b *bytes.Buffer
	n int
}

func (l *limited) Write(p []byte) (int, error) {
	if room := l.n - l.b.Len(); room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func gitOut(ctx context.Context, dir string, cred *syscall.Credential, env []string, args ...string) (string, error) {
	out, code, err := run(ctx, dir, cred, env, "git", append([]string{"-c", "safe.directory=" + dir}, args...)...)
	if err == nil && code != 0 {
		err = errors.New(strings.TrimSpace(out))
	}
	return strings.TrimSpace(out), err
}

// run runs name in dir as cred and returns its output (the tail), its
// exit status, and an error if it could not run.
func run(ctx context.Context, dir string, cred *syscall.Credential, env []string, name string, args ...string) (string, int, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, env
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	s := out.String()
	if len(s) > outputTail {
		s = s[len(s)-outputTail:]
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return s, ee.ExitCode(), nil
	}
	if err != nil {
		return s, -1, err
	}
	return s, 0, nil
}
