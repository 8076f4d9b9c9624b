package mcp

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/engine/enginetest"
	"github.com/tinehq/tine/httpapi"
)

// daemon is a real engine (copy backend: no root needed) behind the API on
// a unix socket, as tine serve runs it.
type daemon struct {
	e    *engine.Engine
	ws   engine.Ref // the workspace's source
	sock string
}

func newDaemon(t *testing.T, files map[string]string) *daemon {
	t.Helper()
	w := enginetest.New(t, enginetest.Options{Name: "app", Home: t.TempDir(), Path: t.TempDir(), Files: files})
	return &daemon{e: w.Engine, ws: w.Source, sock: serveAPI(t, w.Engine)}
}

// serveAPI serves e's API on a socket under a short temporary path (unix
// socket paths are bounded) and returns the path.
func serveAPI(t *testing.T, e *engine.Engine) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "tmcp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: httpapi.New(e, ""), ConnContext: httpapi.ConnContext}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return sock
}

// session connects an MCP client to a server of o over the SDK's in-memory
// transport.
func session(t *testing.T, o Options) *sdk.ClientSession {
	t.Helper()
	ctx := context.Background()
	ct, st := sdk.NewInMemoryTransports()
	ss, err := NewServer(o).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// call calls a tool and returns its result and its one text.
func call(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) (*sdk.CallToolResult, string) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", name, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%s: %d contents, want 1", name, len(res.Content))
	}
	tc, ok := res.Content[0].(*sdk.TextContent)
	if !ok {
		t.Fatalf("%s: content %T, want text", name, res.Content[0])
	}
	return res, tc.Text
}

// ok calls a tool that must succeed and decodes its structured content.
func ok(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any, out any) string {
	t.Helper()
	res, text := call(t, cs, name, args)
	if res.IsError {
		t.Fatalf("%s %v: %s", name, args, text)
	}
	if out != nil {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s: structured content: %v", name, err)
		}
	}
	return text
}

// fails calls a tool that must fail with a one-line tool error containing want.
func fails(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any, want string) {
	t.Helper()
	res, text := call(t, cs, name, args)
	if !res.IsError {
		t.Fatalf("%s %v succeeded: %s", name, args, text)
	}
	if strings.Contains(text, "\n") || !strings.Contains(text, want) {
		t.Errorf("%s %v: error %q, want one line with %q", name, args, text, want)
	}
}
