package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/httpapi"
)

// fakeAPI answers every request with do; it records what was sent.
type fakeAPI struct {
	do   func(method, path string, body any) (int, any, error)
	sent []string
}

var _ API = (*fakeAPI)(nil)

func (f *fakeAPI) Do(_ context.Context, method, path string, body, out any) (int, error) {
	b, _ := json.Marshal(body)
	f.sent = append(f.sent, method+" "+path+" "+string(b))
	code, ans, err := f.do(method, path, body)
	if err != nil {
		return code, err
	}
	raw, _ := json.Marshal(ans)
	return code, json.Unmarshal(raw, out)
}

func (f *fakeAPI) Text(_ context.Context, _ string, limit int) (string, int64, error) {
	return strings.Repeat("+x\n", 30000)[:limit], 90000, nil
}

// pendingDaemon answers every POST as the daemon does from inside a run.
func pendingDaemon() *fakeAPI {
	return &fakeAPI{do: func(method, path string, body any) (int, any, error) {
		a := &tine.Approval{ID: "a12345678", Action: tine.ActionMerge, Run: "r1", ExpiresAt: time.Now().Add(time.Hour)}
		return http.StatusAccepted, map[string]any{"approval": a, "message": "waiting for a person: tine approve a12345678"}, nil
	}}
}

// From inside a run the real merge and discard wait for a person: the
// agent is told so, with the command.
func TestServer_PendingApproval(t *testing.T) {
	api := pendingDaemon()
	cs := session(t, Options{API: api, Self: "r1"})
	for tool, args := range map[string]map[string]any{
		"merge":   {"run": "r1", "dry_run": false},
		"discard": {"run": "r1"},
	} {
		var p pending
		text := ok(t, cs, tool, args, &p)
		if !strings.Contains(text, "A person must approve it with `tine approve a12345678`") || p.Approval != "a12345678" {
			t.Errorf("%s: %s", tool, text)
		}
	}
	slices.Sort(api.sent)
	want := []string{`POST /v1/runs/r1/discard {"force":false}`,
		`POST /v1/runs/r1/merge {"into":"","scope":"","paths":null,"dry_run":false,"text_merge":false,"force":false}`}
	if !slices.Equal(api.sent, want) {
		t.Errorf("sent %q", api.sent)
	}
}

// Inside a run, fork and cost default to the caller's own run;
// merge is a dry run unless told otherwise.
func TestServer_Defaults(t *testing.T) {
	api := &fakeAPI{do: func(method, path string, body any) (int, any, error) {
		return http.StatusNotFound, nil, fmt.Errorf("stop here: %w", tine.ErrNotFound)
	}}
	cs := session(t, Options{API: api, Self: "r1"})
	fails(t, cs, "fork", map[string]any{"approaches": []string{"a", "b"}}, "stop here")
	fails(t, cs, "cost", map[string]any{}, "stop here")
	fails(t, cs, "merge", map[string]any{"run": "r1"}, "stop here")
	if body, _ := json.Marshal(httpapi.ForkRequest{Copies: 2, Approaches: []string{"a", "b"}}); api.sent[0] != "POST /v1/runs/r1/fork "+string(body) {
		t.Errorf("fork sent %s", api.sent[0])
	}
	if api.sent[1] != "GET /v1/runs/r1/diff null" || !strings.Contains(api.sent[2], `"dry_run":true`) {
		t.Errorf("sent %q", api.sent[1:])
	}
}

func TestServer_PatchTruncated(t *testing.T) {
	cs := session(t, Options{API: &fakeAPI{}})
	text := ok(t, cs, "diff", map[string]any{"run": "r1", "patch": true}, nil)
	if !strings.HasPrefix(text, "The patch of r1 is 90000 bytes; only the first") {
		t.Errorf("a long patch: %.200s", text)
	}
}

func sortStrings(s []string) []string { slices.Sort(s); return s }

// A fork the daemon queues (an agent forking itself mid-turn) is reported
// as not done yet, with the daemon's message.
func TestServer_ForkQueued(t *testing.T) {
	api := &fakeAPI{do: func(method, path string, body any) (int, any, error) {
		return http.StatusAccepted, map[string]any{"queued": true, "message": "tine forks source when this turn stops: say so and end the turn"}, nil
	}}
	cs := session(t, Options{API: api, Self: "r1"})
	if text := ok(t, cs, "fork", map[string]any{"copies": 2}, nil); !strings.HasPrefix(text, "Not forked yet: tine forks source when this turn stops") {
		t.Errorf("a queued fork: %s", text)
	}
}

// An answer of an unexpected shape is a tool error, not a dead server.
func TestServer_OddAnswer(t *testing.T) {
	api := &fakeAPI{do: func(method, path string, body any) (int, any, error) { return http.StatusOK, map[string]any{}, nil }}
	cs := session(t, Options{API: api})
	fails(t, cs, "merge", map[string]any{"run": "r1"}, "tine mcp: merge:")
	fails(t, cs, "fork", map[string]any{"run": "r1"}, "the daemon's answer to a fork")
	fails(t, cs, "cost", map[string]any{"group": "g1"}, "tine mcp: cost:") // the server lives on
}

// effect sends the request as tine effect does, for the caller's own run,
// and answers with the line tine effect prints.
func TestServer_Effect(t *testing.T) {
	api := &fakeAPI{do: func(method, path string, body any) (int, any, error) {
		a := &tine.Approval{ID: "a12345678", Action: tine.ActionEffect, Run: "r1", ExpiresAt: time.Now().Add(time.Hour)}
		return http.StatusAccepted, map[string]any{"approval": a, "plan": map[string]any{"kind": "http", "method": "POST", "url": "https://x.test/deploy"},
			"message": "waiting for a person: tine approve a12345678"}, nil
	}}
	cs := session(t, Options{API: api, Self: "r1"})
	text := ok(t, cs, "effect", map[string]any{"kind": "http", "method": "post", "url": "https://x.test/deploy", "body": "{}", "key": "k1"}, nil)
	if !strings.Contains(text, "is pending as a12345678") || !strings.Contains(text, "tine approve a12345678") {
		t.Errorf("answer: %s", text)
	}
	if want := `POST /v1/runs/r1/effects {"kind":"http","key":"k1","method":"post","url":"https://x.test/deploy","body":"{}"}`; len(api.sent) != 1 || api.sent[0] != want {
		t.Errorf("sent %q, want %s", api.sent, want)
	}
	fails(t, session(t, Options{API: api}), "effect", map[string]any{"kind": "git-push"}, "run is required")
}
