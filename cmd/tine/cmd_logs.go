package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
)

func newLogs(a *app) *cobra.Command {
	var follow bool
	var lines int
	c := &cobra.Command{
		Use:   "logs RUN [SERVICE]",
		Short: "Print the logs of a run's services",
		Long: `Prints the output of SERVICE of RUN, or of every service of RUN, each line
prefixed with its service's name. --tail N prints only the last N lines of
each; --follow keeps printing what is appended until interrupted.`,
		Example: `  tine logs source web
  tine logs source-2 --follow`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) < 1 || len(args) > 2 {
				return usageErr(c, "logs needs RUN and at most one SERVICE")
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			var files map[string]string
			err := a.withEngine(c.Context(), func(e *engine.Engine) error {
				r, err := e.FindRun(c.Context(), args[0])
				if err != nil {
					return err
				}
				files, err = logFiles(e.LogDir(r), r.Run.Name, args[1:])
				return err
			})
			if err != nil {
				return err
			}
			return a.printLogs(c.Context(), files, lines, follow, len(args) == 1)
		},
	}
	c.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new lines")
	c.Flags().IntVarP(&lines, "tail", "n", 0, "print only the last N lines of each log (0: all)")
	return c
}

// logFiles maps service names to their log files.
func logFiles(dir, run string, only []string) (map[string]string, error) {
	out := map[string]string{}
	if len(only) == 1 {
		p := filepath.Join(dir, only[0]+".log")
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("%s has no log of a service %q: %w", run, only[0], tine.ErrNotFound)
		}
		out[only[0]] = p
		return out, nil
	}
	ents, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, ent := range ents {
		if name, ok := strings.CutSuffix(ent.Name(), ".log"); ok {
			out[name] = filepath.Join(dir, ent.Name())
		}
	}
	return out, nil
}

func (a *app) printLogs(ctx context.Context, files map[string]string, tail int, follow, prefix bool) error {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	offsets := map[string]int64{}
	for _, n := range names {
		off, err := a.printLog(files[n], n, tail, prefix, 0)
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
			off, err := a.printLog(files[n], n, 0, prefix, offsets[n])
			if err != nil {
				return err
			}
			offsets[n] = off
		}
	}
	return nil
}

// printLog prints log path from offset (the last tail lines when tail > 0)
// and returns the offset it reached.
func (a *app) printLog(path, name string, tail int, prefix bool, offset int64) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return offset, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return offset, err
	}
	var out []string
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadString('\n')
		if err != nil { // a partial last line waits for its newline
			break
		}
		offset += int64(len(line))
		out = append(out, line)
		if tail > 0 && len(out) > tail {
			out = out[1:]
		}
	}
	for _, line := range out {
		if prefix {
			fmt.Fprintf(a.stdout, "%s | %s", name, line)
		} else {
			fmt.Fprint(a.stdout, line)
		}
	}
	return offset, nil
}
