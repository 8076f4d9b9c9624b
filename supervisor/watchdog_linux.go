package supervisor

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/tinehq/tine/cgroup"
	"github.com/tinehq/tine/internal/freezerec"
)

// watchdogArgv0 marks the re-executed tine binary that must become a
// freeze's watchdog.
const watchdogArgv0 = "tine-thaw-watchdog"

const watchEnv = "_TINE_WATCHDOG_SPEC"

// What the freezer writes into the watchdog's pipe.
const (
	beat     = 'b' // still working
	released = 'd' // thawed: nothing to do
)

// isWatchdog reports whether this process was started as a watchdog.
func isWatchdog() bool { return len(os.Args) > 0 && os.Args[0] == watchdogArgv0 }

// watchdog is the freezer's end of a running watchdog.
type watchdog struct {
	pid  int
	w    *os.File
	stop chan struct{}
	once sync.Once
}

// startWatchdog starts the watchdog of a freeze spec describes, in a
// session of its own (a terminal's ^C reaches the freezer, not it), and
// the goroutine that sends it heartbeats.
func startWatchdog(spec watchSpec) (*watchdog, error) {
	bin, err := os.Executable()
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	cmd := &exec.Cmd{Path: bin, Args: []string{watchdogArgv0}, Stdin: r, Stderr: os.Stderr,
		Env: []string{watchEnv + "=" + string(b)}, SysProcAttr: &syscall.SysProcAttr{Setsid: true}}
	if err := cmd.Start(); err != nil {
		w.Close()
		return nil, fmt.Errorf("starting a freeze watchdog: %w", err)
	}
	go cmd.Wait()
	d := &watchdog{pid: cmd.Process.Pid, w: w, stop: make(chan struct{})}
	go d.beat(spec.Limit / 4)
	return d, nil
}

// beat tells the watchdog every period that the freezer is still working.
func (d *watchdog) beat(period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-d.stop:
			return
		case <-t.C:
			d.w.Write([]byte{beat})
		}
	}
}

// release tells the watchdog the freeze is over and lets it go. A nil
// watchdog (none could start) does nothing.
func (d *watchdog) release() {
	if d == nil {
		return
	}
	d.once.Do(func() {
		close(d.stop)
		d.w.Write([]byte{released})
		d.w.Close()
	})
}

// watchdogMain is the watchdog process: it waits for its freezer to say
// the freeze is over, and thaws the group when the freezer dies first or
// is silent for the limit. It never returns.
func watchdogMain() {
	var spec watchSpec
	if err := json.Unmarshal([]byte(os.Getenv(watchEnv)), &spec); err != nil {
		fmt.Fprintf(os.Stderr, "tine: freeze watchdog: bad spec: %v\n", err)
		os.Exit(2)
	}
	why := watch(spec.Limit)
	if why == "" {
		os.Exit(0)
	}
	// Only the freeze this watchdog guards: a record gone, or naming
	// another freezer, means it was thawed and maybe frozen again since.
	if rec, err := freezerec.Read(spec.Record); err != nil || rec.Pid != spec.Pid || rec.Start != spec.Start {
		os.Exit(0)
	}
	cg, err := cgroup.Load(spec.Cgroup)
	if err == nil {
		err = cg.Thaw()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "tine: freeze watchdog: thawing %s: %v\n", spec.Name, err)
		os.Exit(1)
	}
	if !procAlive(spec) {
		os.Remove(spec.Record)
	}
	fmt.Fprintf(os.Stderr, "tine: thawed %s: %s\n", spec.Name, why)
	os.Exit(0)
}

// watch reads the freezer's pipe (standard input) until the freeze is
// over; it returns "" when the freezer released it, else why it was not.
func watch(limit time.Duration) string {
	syscall.SetNonblock(0, true) // so that reads take a deadline
	in := os.NewFile(0, "freezer")
	buf := make([]byte, 1)
	for {
		in.SetReadDeadline(time.Now().Add(limit))
		n, err := in.Read(buf)
		switch {
		case n == 1 && buf[0] == released:
			return ""
		case n == 1:
			continue
		case errors.Is(err, os.ErrDeadlineExceeded):
			return fmt.Sprintf("the command that froze it gave no sign of life for %s", limit)
		case errors.Is(err, io.EOF):
			return "the command that froze it died"
		case err != nil:
			return fmt.Sprintf("the pipe from the command that froze it failed: %v", err)
		}
	}
}

// procAlive reports whether the freezer spec names still runs.
func procAlive(spec watchSpec) bool {
	return freezerec.Record{Pid: spec.Pid, Start: spec.Start}.Alive()
}
