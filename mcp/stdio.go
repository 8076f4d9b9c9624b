package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxLine bounds one message read by [LineTransport].
const MaxLine = sdk.DefaultMaxLineLength

// LineTransport is the SDK's newline-delimited stdio transport with a
// guard in front: a line that is not one JSON-RPC message (not JSON, a
// JSON value that is no request, notification or response, a batch, a
// line over MaxLine) is answered with a JSON-RPC error (-32700 parse
// error, -32600 invalid request) and skipped, where the SDK alone would
// end the session. Blank lines are skipped.
type LineTransport struct {
	In  io.Reader // default os.Stdin
	Out io.Writer // default os.Stdout
}

// Connect implements [sdk.Transport].
func (t *LineTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	in, out := t.In, t.Out
	if in == nil {
		in = os.Stdin
	}
	if out == nil {
		out = os.Stdout
	}
	w := &lockedWriter{w: out}
	pr, pw := io.Pipe()
	go filterLines(in, pw, w)
	return (&sdk.IOTransport{Reader: pr, Writer: nopCloser{w}}).Connect(ctx)
}

// filterLines copies the well-formed messages of in to pw, one per line,
// and answers the others on out. It closes pw when in ends.
func filterLines(in io.Reader, pw *io.PipeWriter, out *lockedWriter) {
	rd := bufio.NewReaderSize(in, 64<<10)
	for {
		line, tooLong, err := readLine(rd)
		switch {
		case tooLong:
			out.reply(nil, -32600, "Invalid Request: the message is longer than the limit of 16 MiB")
		case len(bytes.TrimSpace(line)) == 0:
		default:
			if id, code, msg, ok := check(line); !ok {
				out.reply(id, code, msg)
			} else if _, werr := pw.Write(append(bytes.TrimRight(line, "\r\n"), '\n')); werr != nil {
				return // the session is closed
			}
		}
		if err != nil {
			pw.CloseWithError(eofOr(err))
			return
		}
	}
}

// readLine reads one line, without keeping more than MaxLine of it.
func readLine(rd *bufio.Reader) (line []byte, tooLong bool, err error) {
	for {
		frag, err := rd.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(frag) > MaxLine {
				tooLong, line = true, nil
			} else {
				line = append(line, frag...)
			}
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, tooLong, err
		}
	}
}

func eofOr(err error) error {
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// check reports whether line is one JSON-RPC message, and if not the id
// to answer with (when one can be read), the error code and message.
func check(line []byte) (id any, code int64, msg string, ok bool) {
	if !json.Valid(line) {
		return nil, -32700, "Parse error: the line is not JSON", false
	}
	var probe struct {
		ID any `json:"id"`
	}
	if json.Unmarshal(line, &probe) == nil {
		id = probe.ID
	}
	if t := bytes.TrimSpace(line); len(t) > 0 && t[0] == '[' {
		return nil, -32600, "Invalid Request: batches are not supported", false
	}
	if _, err := jsonrpc.DecodeMessage(line); err != nil {
		return id, -32600, "Invalid Request: " + err.Error(), false
	}
	return nil, 0, "", true
}

// lockedWriter serializes the SDK's writes and the guard's replies, each
// one whole line.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// reply writes a JSON-RPC error response.
func (l *lockedWriter) reply(id any, code int64, msg string) {
	switch id.(type) {
	case string, float64:
	default:
		id = nil // only a string or number is an id
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
	l.Write(append(b, '\n'))
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
