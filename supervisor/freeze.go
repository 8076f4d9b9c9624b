package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/tinehq/tine/cgroup"
	"github.com/tinehq/tine/internal/freezerec"
	"github.com/tinehq/tine/internal/procfs"
	"github.com/tinehq/tine/internal/testhook"
)

// A run's cgroup is frozen while its files are sealed (tine fork) or
// written (tine merge, combine). Freezing stops every process of the run,
// its supervisor included, so nothing inside the run can undo a freeze
// whose freezer died. Two things outside it do:
//
//   - the freeze record, a file naming the freezer (its pid and the start
//     time that tells it from a later process given the same pid),
//     written before the group is frozen and removed after it is thawed:
//     ThawAbandoned, which the sweeper runs whenever a command opens the
//     state directory, thaws a group whose record names a dead freezer;
//   - a watchdog, the tine binary re-executed in a session of its own for
//     the length of the freeze, which holds the reading end of a pipe the
//     freezer writes heartbeats into: it thaws the group as soon as the
//     pipe ends without the freezer saying it thawed (the freezer died,
//     whatever killed it), or when no heartbeat came for the freeze's
//     limit (the freezer was stopped).
//
// See docs/architecture.md, "A freeze outlives no freezer".

// FreezeLimit is how long a frozen run waits for a heartbeat from its
// freezer before the watchdog thaws it; TINE_FREEZE_LIMIT (a Go duration)
// changes it. A live freezer beats every FreezeLimit/4, so only a freezer
// that is stopped (SIGSTOP, a suspended terminal) or wedged reaches it.
const FreezeLimit = 30 * time.Second

// freezeLimitEnv names the variable that overrides FreezeLimit.
const freezeLimitEnv = "TINE_FREEZE_LIMIT"

// freezeTimeout bounds how long Freeze waits for every task to stop.
const freezeTimeout = 10 * time.Second

// watchSpec is what a watchdog is told of the freeze it guards.
type watchSpec struct {
	Cgroup string        `json:"cgroup"` // the frozen group (cgroup.Load)
	Record string        `json:"record"` // the freeze record's path
	Name   string        `json:"name"`   // the run's, for the message
	Pid    int           `json:"pid"`    // the freezer, and its start time
	Start  string        `json:"start"`
	Limit  time.Duration `json:"limit"` // how long it waits for a heartbeat
}

// Freeze freezes group cg of the run called name and returns the function
// that thaws it. It records the freeze at path first and starts a
// watchdog (see above); thawing removes both. A group left partly frozen
// by a failed freeze is thawed before Freeze returns the error.
func Freeze(ctx context.Context, cg *cgroup.Group, path, name string) (func(), error) {
	me, err := procfs.Read("", os.Getpid())
	if err != nil {
		return nil, fmt.Errorf("freezing %s: %w", name, err)
	}
	rec := freezerec.Record{Pid: me.Pid, Start: me.StartTime, At: time.Now().UTC()}
	if err := freezerec.Write(path, rec); err != nil {
		return nil, fmt.Errorf("freezing %s: recording the freeze: %w", name, err)
	}
	// The watchdog starts (an exec of tine, some milliseconds) while the
	// group freezes; until it is up, the record alone recovers a crash.
	started := make(chan *watchdog, 1)
	go func() {
		wd, err := startWatchdog(watchSpec{Cgroup: cg.Name(), Record: path, Name: name, Pid: rec.Pid, Start: rec.Start, Limit: freezeLimit()})
		if err != nil {
			fmt.Fprintf(os.Stderr, "tine: warning: freezing %s without a watchdog: %v\n", name, err)
		}
		started <- wd
	}()
	fctx, cancel := context.WithTimeout(ctx, freezeTimeout)
	defer cancel()
	ferr := cg.Freeze(fctx)
	wd := <-started
	thaw := func() error {
		err := cg.Thaw()
		if err == nil {
			os.Remove(path)
		}
		wd.release() // after the record goes: a watchdog that finds none thaws nothing
		return err
	}
	if ferr != nil {
		thaw()
		return nil, fmt.Errorf("freezing %s: %w", name, ferr)
	}
	if wd != nil {
		rec.Watchdog = wd.pid
		freezerec.Write(path, rec) // for whoever looks; the watchdog needs only the freezer's pid
	}
	testhook.Pause("frozen")
	return func() {
		if err := thaw(); err != nil {
			fmt.Fprintf(os.Stderr, "tine: warning: thawing %s: %v\n", name, err)
		}
	}, nil
}

// freezeLimit is FreezeLimit, or what TINE_FREEZE_LIMIT says.
func freezeLimit() time.Duration {
	if d, err := time.ParseDuration(os.Getenv(freezeLimitEnv)); err == nil && d > 0 {
		return d
	}
	return FreezeLimit
}

// Abandoned says what ThawAbandoned put right.
type Abandoned struct {
	Pid    int  // the freezer that died
	Thawed bool // the group was still frozen, and is thawed now
}

// ThawAbandoned thaws group cg when the freeze record at path names a
// freezer that is no longer running, and removes the record. It reports
// what it found; nil when there is no record or its freezer still runs.
// A caller must hold what every freezer of the group holds (the
// workspace's lock), so that no new freeze begins meanwhile.
func ThawAbandoned(cg *cgroup.Group, path string) (*Abandoned, error) {
	rec, err := freezerec.Read(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err == nil && rec.Alive():
		return nil, nil
	}
	out := &Abandoned{Pid: rec.Pid}
	if cg != nil {
		if asked, _ := cg.Freezing(); asked {
			if err := cg.Thaw(); err != nil {
				return nil, err
			}
			out.Thawed = true
		}
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return out, err
	}
	return out, nil
}
