package main

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/internal/procfs"
)

// What tine fork says of a busy source's seal: who held it (this very
// command, when the daemon found its cwd there, by that name), and what
// the seal copied: the whole delta, the change since the last fork, or
// the change since the daemon's background seal.
func TestPrintSeal(t *testing.T) {
	held := []procfs.Holder{{Pid: 4121, Command: "bash", Uses: "cwd"}, {Pid: os.Getpid(), Command: "tine", Uses: "cwd"}}
	for _, c := range []struct {
		seal *engine.SealReport
		want string
	}{
		{&engine.SealReport{Busy: true, Whole: true, Files: 20000, Bytes: 4 << 20, MS: 1200, Holders: held},
			"source busy (pid 4121 bash has its cwd in it; pid " + strconv.Itoa(os.Getpid()) + " tine (this command) has its cwd in it): copied its whole delta, 20000 files (4.0 MiB), in 1.2 s"},
		{&engine.SealReport{Busy: true, Running: true, Files: 12, Bytes: 2048, MS: 30},
			"source busy (its commands run in it): copied 12 changed files (2.0 KiB) in 30 ms"},
		{&engine.SealReport{Busy: true, Presealed: true, Files: 3, Bytes: 25, MS: 28, Holders: held[:1]},
			"source busy (pid 4121 bash has its cwd in it): copied 3 files changed since its seal in the background (25 B) in 28 ms"},
		{&engine.SealReport{Busy: true, Presealed: true, Unchanged: true, MS: 1, Holders: held[:1]},
			"source busy (pid 4121 bash has its cwd in it): nothing changed since its seal in the background, nothing copied"},
		{&engine.SealReport{MS: 5}, ""},
	} {
		var out bytes.Buffer
		a := &app{stdout: &out, stderr: &out}
		a.printSeal("source", c.seal)
		if got := strings.TrimSpace(out.String()); got != c.want {
			t.Errorf("printSeal(%+v):\n got %q\nwant %q", c.seal, got, c.want)
		}
	}
}
