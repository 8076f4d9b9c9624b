package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/internal/display"
	"github.com/tinehq/tine/runtime"
)

func newLogs(a *app) *cobra.Command {
	var follow, asJSON bool
	var lines int
	c := &cobra.Command{
		Use:   "logs RUN [SERVICE]",
		Short: "Print the logs of a run's services",
		Long: `Prints the output of SERVICE of RUN, or of every service of RUN, each line
prefixed with its service's name. --tail N prints only the last N lines of
each; --follow keeps printing what is appended until interrupted. On a
terminal the output's control characters (escape sequences, carriage
returns, bidirectional overrides) are shown escaped, as \x1b or \u202e;
into a pipe or a file it is copied exactly (tine logs RUN | cat for the raw
bytes on a terminal).`,
		Example: `  tine logs source web
  tine logs source-2 --follow`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) < 1 || len(args) > 2 {
				return usageErr(c, "logs needs RUN and at most one SERVICE")
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			if a.remote() {
				cl := a.daemon()
				ref := remoteRef(c.Context(), cl, args[0])
				ls, err := cl.Logs(c.Context(), ref, args[1:])
				if err != nil {
					return err
				}
				return a.printLogs(c.Context(), ls.Services, func(name string, off int64) (string, int64, error) {
					chunk, err := cl.LogChunk(c.Context(), ref, name, off)
					return chunk.Text, chunk.Offset, err
				}, logView{prefix: len(args) == 1, json: asJSON}, lines, follow)
			}
			return a.withEngine(c.Context(), func(e *engine.Engine) error {
				r, err := e.FindRun(c.Context(), args[0])
				if err != nil {
					return err
				}
				names, err := runtime.Of(e).LogServices(r, args[1:]...)
				if err != nil {
					return err
				}
				return a.printLogs(c.Context(), names, func(name string, off int64) (string, int64, error) {
					return runtime.Of(e).ReadLog(r, name, off, logChunk)
				}, logView{prefix: len(args) == 1, json: asJSON}, lines, follow)
			})
		},
	}
	c.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new lines")
	c.Flags().IntVarP(&lines, "tail", "n", 0, "print only the last N lines of each log (0: all)")
	c.Flags().BoolVar(&asJSON, "json", false, `print JSON Lines: {"service", "line"} per line`)
	return c
}

// logChunk bounds what one read of a log returns (engine.Engine.ReadLog).
const logChunk = 4 << 20

// readLogFunc reads a service's log from an offset: whole lines, and the
// offset after them.
type readLogFunc func(service string, offset int64) (string, int64, error)

// logView is how tine logs prints: each line after its service's name
// when it prints more than one service, and, on a terminal, with the
// control characters of the services' output escaped (terminalText); with
// --json as JSON Lines.
type logView struct {
	w      io.Writer
	prefix bool
	tty    bool
	json   bool
}

// logLine is one line of tine logs --json.
type logLine struct {
	Service string `json:"service"`
	Line    string `json:"line"`
}

func (a *app) printLogs(ctx context.Context, names []string, read readLogFunc, v logView, tail int, follow bool) error {
	v.w, v.tty = a.stdout, isTerminal(a.stdout)
	offsets := map[string]int64{}
	for _, n := range names {
		off, err := v.print(read, n, tail, 0)
		if err != nil {
			return err
		}
		offsets[n] = off
	}
	for follow {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(200 * time.Millisecond):
		}
		for _, n := range names {
			off, err := v.print(read, n, 0, offsets[n])
			if err != nil {
				return err
			}
			offsets[n] = off
		}
	}
	return nil
}

// print prints service name's log from offset (the last tail lines when
// tail > 0) and returns the offset it reached.
func (v logView) print(read readLogFunc, name string, tail int, offset int64) (int64, error) {
	var out []string
	for {
		text, next, err := read(name, offset)
		if err != nil {
			return offset, err
		}
		if next == offset {
			break
		}
		offset = next
		out = append(out, strings.SplitAfter(text, "\n")...)
		if out[len(out)-1] == "" {
			out = out[:len(out)-1]
		}
		if tail > 0 && len(out) > tail {
			out = out[len(out)-tail:]
		}
		if tail == 0 { // print as it comes
			v.lines(out, name)
			out = out[:0]
		}
	}
	v.lines(out, name)
	return offset, nil
}

func (v logView) lines(lines []string, name string) {
	for _, line := range lines {
		if v.json {
			b, _ := json.Marshal(logLine{Service: name, Line: strings.TrimSuffix(line, "\n")})
			fmt.Fprintf(v.w, "%s\n", b)
			continue
		}
		if v.tty {
			line = display.Block(line)
		}
		if v.prefix {
			fmt.Fprintf(v.w, "%s | %s", name, line)
		} else {
			fmt.Fprint(v.w, line)
		}
	}
}
