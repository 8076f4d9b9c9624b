// Package effect is tine's mediator for external effects: a push to a git
// remote, an HTTP request, a declared command. Code in a run asks for one;
// the daemon resolves exactly what would be sent (the remote's URL and the
// commit, the request and its body's digest), a person approves that, and
// only then does the daemon do it, outside the run, once per idempotency
// key, keeping a receipt of what happened.
package effect

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Kinds of effect.
const (
	GitPush = "git-push"
	HTTP    = "http"
	Run     = "run"
)

// Request is an effect as asked for from inside a run.
type Request struct {
	Kind string `json:"kind"`
	// Key makes the request idempotent: asked again with the same key, the
	// effect is not repeated; the first request's approval or receipt is
	// the answer. Empty: the digest of the request itself.
	Key string `json:"key,omitempty"`

	Remote  string `json:"remote,omitempty"`  // git-push: the remote (default origin)
	Refspec string `json:"refspec,omitempty"` // git-push: what to push (default the current branch)

	Method string `json:"method,omitempty"` // http
	URL    string `json:"url,omitempty"`    // http
	Body   string `json:"body,omitempty"`   // http

	Args []string `json:"args,omitempty"` // run: the command, which [effects] commands must declare
}

// Plan is a request resolved to exactly what would be done: what a person
// approves and the daemon then carries out.
type Plan struct {
	Request
	Dir        string `json:"dir"`                   // where it runs (the source's files)
	RemoteURL  string `json:"remote_url,omitempty"`  // git-push
	Commit     string `json:"commit,omitempty"`      // git-push: the commit the refspec's source names now
	Dest       string `json:"dest,omitempty"`        // git-push: the remote ref
	BodySHA256 string `json:"body_sha256,omitempty"` // http
}

// Receipt is what carrying out a plan did.
type Receipt struct {
	Kind       string    `json:"kind"`
	Key        string    `json:"key"`
	Approval   string    `json:"approval"`
	Time       time.Time `json:"time"`
	Status     int       `json:"status"`                // exit status, or the HTTP status
	OK         bool      `json:"ok"`                    // exit 0, or HTTP 2xx
	BodySHA256 string    `json:"body_sha256,omitempty"` // of the HTTP response body
	Output     string    `json:"output,omitempty"`      // the tail of the command's output or the response body
	Error      string    `json:"error,omitempty"`
}

// Check reports a request that cannot be carried out, in one line.
func (r Request) Check(declared []string) error {
	switch r.Kind {
	case GitPush:
		if strings.HasPrefix(r.Remote, "-") || strings.HasPrefix(r.Refspec, "-") {
			return fmt.Errorf("git-push: remote and refspec must not start with '-'")
		}
	case HTTP:
		u, err := url.Parse(r.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("http: %q is not an http or https URL", r.URL)
		}
		if !slices.Contains([]string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"}, r.Method) {
			return fmt.Errorf("http: method %q is not GET, HEAD, POST, PUT, PATCH or DELETE", r.Method)
		}
	case Run:
		if len(r.Args) == 0 {
			return fmt.Errorf("run: no command")
		}
		if !slices.Contains(declared, r.Args[0]) {
			return fmt.Errorf("run: %q is not declared in tine.toml's [effects] commands", r.Args[0])
		}
	default:
		return fmt.Errorf("effect %q: use git-push, http or run", r.Kind)
	}
	return nil
}

// KeyOf is the plan's key: the request's, or the digest of what it does.
func KeyOf(p Plan) string {
	if p.Key != "" {
		return p.Key
	}
	b, _ := json.Marshal(p)
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:12])
}

// Describe says in one line what a plan does, for the person approving it.
func Describe(p Plan) string {
	switch p.Kind {
	case GitPush:
		return fmt.Sprintf("git push %s (%s): commit %s to %s", p.Remote, p.RemoteURL, p.Commit, p.Dest)
	case HTTP:
		return fmt.Sprintf("%s %s with a body of %d bytes (sha256 %s)", p.Method, p.URL, len(p.Body), p.BodySHA256)
	case Run:
		return fmt.Sprintf("run %q in %s", strings.Join(p.Args, " "), p.Dir)
	}
	return p.Kind
}
