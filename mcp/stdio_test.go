package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tinehq/tine/forkrun"
	"github.com/tinehq/tine/httpapi"
)

// stdio runs a server on a LineTransport (or the SDK's own IOTransport
// with sdkOnly) and returns a function that sends one line and returns
// the next answer line ("" when the server ended).
func stdio(t *testing.T, sdkOnly bool) func(line string, answer bool) string {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var tr sdk.Transport = &LineTransport{In: inR, Out: outW}
	if sdkOnly {
		tr = &sdk.IOTransport{Reader: inR, Writer: outW}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- NewServer(Options{API: &fakeAPI{}}).Run(ctx, tr); outW.Close() }()
	t.Cleanup(func() { cancel(); inW.Close(); <-done })
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	return func(line string, answer bool) string {
		t.Helper()
		go fmt.Fprintln(inW, line)
		if !answer {
			return ""
		}
		select {
		case l := <-lines:
			return l
		case <-time.After(5 * time.Second):
			t.Fatalf("no answer to %s", line)
		}
		return ""
	}
}

const (
	initLine   = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`
	listLine   = `{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`
	initedLine = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
)

// TestLineTransport_MalformedLines: a line that is not JSON, a JSON value
// that is not a message, and a batch each get a JSON-RPC error reply (with
// the id when there is one) and the server goes on answering; the server
// reports its version. The SDK's own transport ends the session at the
// first bad line, which is what tine mcp did (TINE_TEST_SDK_TRANSPORT=1
// runs this test on it, and it fails).
func TestLineTransport_MalformedLines(t *testing.T) {
	send := stdio(t, os.Getenv("TINE_TEST_SDK_TRANSPORT") != "")
	var init struct {
		Result struct {
			ServerInfo struct{ Name, Version string } `json:"serverInfo"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(send(initLine, true)), &init); err != nil || init.Result.ServerInfo.Version != Version() || Version() == "" {
		t.Errorf("serverInfo %+v (%v), want version %q", init.Result.ServerInfo, err, Version())
	}
	send(initedLine, false)
	for i, c := range []struct {
		line string
		code float64
		id   any
	}{
		{"this is not json", -32700, nil},
		{`{"jsonrpc":"2.0","id":7,"method":`, -32700, nil},
		{`{"id":8}`, -32600, 8.0},
		{`[` + fmt.Sprintf(listLine, 9) + `]`, -32600, nil},
		{`42`, -32600, nil},
	} {
		var m struct {
			ID    any `json:"id"`
			Error *struct {
				Code    float64 `json:"code"`
				Message string  `json:"message"`
			} `json:"error"`
		}
		ans := send(c.line, true)
		if err := json.Unmarshal([]byte(ans), &m); err != nil || m.Error == nil || m.Error.Code != c.code || m.ID != c.id {
			t.Errorf("%q: answer %s, want error %v with id %v", c.line, ans, c.code, c.id)
		}
		// The server is still there.
		if ans := send(fmt.Sprintf(listLine, 100+i), true); !strings.Contains(ans, `"fork_run"`) || !strings.Contains(ans, fmt.Sprintf(`"id":%d`, 100+i)) {
			t.Fatalf("after %q: %s", c.line, ans)
		}
	}
	send("", false) // a blank line is no message and gets no answer
	if ans := send(fmt.Sprintf(listLine, 200), true); !strings.Contains(ans, `"id":200`) {
		t.Errorf("after a blank line: %s", ans)
	}
}

// TestServer_GuidanceInStructuredContent: the note that tells the agent
// what to do next (follow fork_run with fork_report) is in the structured
// content too, which is all Codex shows its model.
func TestServer_GuidanceInStructuredContent(t *testing.T) {
	started := endedReport()
	started.Outcome = forkrun.OutcomeRunning
	api := &fakeAPI{do: func(method, path string, body any) (int, any, error) {
		return http.StatusAccepted, httpapi.ForkRunStarted{Group: "g1", Report: started}, nil
	}}
	cs := session(t, Options{API: api, Self: "r0"})
	var out struct {
		Group    string `json:"group"`
		Guidance string `json:"guidance"`
	}
	text := ok(t, cs, "fork_run", map[string]any{"prompt": "fix it"}, &out)
	if out.Group != "g1" || !strings.Contains(out.Guidance, "fork_run_report group=g1") || !strings.Contains(text, out.Guidance) {
		t.Errorf("structured %+v; text %s", out, text)
	}
}

// TestServer_ForkRunCopiesPerApproach: fork_run with a prompt and two
// approaches asks for two forks, not the daemon's default of three.
func TestServer_ForkRunCopiesPerApproach(t *testing.T) {
	started := endedReport()
	api := &fakeAPI{do: func(method, path string, body any) (int, any, error) {
		return http.StatusAccepted, httpapi.ForkRunStarted{Group: "g1", Report: started}, nil
	}}
	cs := session(t, Options{API: api, Self: "r0"})
	ok(t, cs, "fork_run", map[string]any{"prompt": "fix it", "approaches": []string{"a", "b"}}, nil)
	ok(t, cs, "fork_run", map[string]any{"prompt": "fix it"}, nil)
	var sent []forkrun.Request
	for _, s := range api.sent {
		_, body, _ := strings.Cut(strings.TrimPrefix(s, "POST "), " ")
		var r forkrun.Request
		if err := json.Unmarshal([]byte(body), &r); err != nil {
			t.Fatal(err)
		}
		sent = append(sent, r)
	}
	if len(sent) != 2 || sent[0].N == nil || *sent[0].N != 2 || sent[1].N != nil {
		t.Errorf("sent %s", api.sent)
	}
}
