package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tinehq/tine"
)

// The line of an error: its sentence, without the sentinel's category or
// Go's words, on one line.
func TestErrLine(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("no run %q (see tine ls): %w", "x", tine.ErrNotFound), `no run "x" (see tine ls)`},
		{fmt.Errorf("stop x: %w", fmt.Errorf("no backend works here: %w", tine.ErrUnsupported)), "stop x: no backend works here"},
		{fmt.Errorf("%w; the tine daemon runs it for you", fmt.Errorf("fork needs root: %w", tine.ErrPrivilege)), "fork needs root; the tine daemon runs it for you"},
		{fmt.Errorf("x: %w", tine.ErrNotFound), "x: not found"}, // a bare word keeps its category
		{fmt.Errorf("waiting for x: %w", context.Canceled), "waiting for x: interrupted"},
		{errors.New("two\nlines"), "two lines"},
		{fmt.Errorf("merge a b: %w: %w", tine.ErrInvalid, tine.ErrUnmerged), "merge a b"},
		{fmt.Errorf("the file is not found: in the tree: %w", tine.ErrNotFound), "the file is not found: in the tree"},
	} {
		if got := errLine(c.err); got != c.want {
			t.Errorf("errLine(%q) = %q, want %q", c.err, got, c.want)
		}
	}
}

func TestWantsJSON(t *testing.T) {
	for args, want := range map[string]bool{"ls --json": true, "exec r -- x --json": false, "ls": false, "ls --json=true": true} {
		if got := wantsJSON(strings.Fields(args)); got != want {
			t.Errorf("wantsJSON(%s) = %v", args, got)
		}
	}
}
