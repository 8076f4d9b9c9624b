//go:build linux

package main

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A run frozen by a tine command that dies is thawed: at once by the
// freeze's watchdog, or by the next command that opens the state
// directory when the watchdog is gone too. They all failed when a killed
// fork or merge left its run frozen for good.

// frozenSetup is a workspace whose source serves web on its own address.
type frozenSetup struct {
	*env
	src  jsonLsRow
	addr string
}

func newFrozenSetup(t *testing.T) *frozenSetup {
	e, _ := liveWorkspace(t, true, map[string]string{"tine.toml": webToml, "page.txt": "source\n"})
	e.ok("start", "source")
	s := &frozenSetup{env: e, addr: e.ps("source").Addr}
	for _, r := range e.ls() {
		if r.Name == "source" {
			s.src = r
		}
	}
	// tine start waited for the port inside the run's network; from the
	// host, through its veth, a loaded machine may take a moment more.
	if !s.answersWithin(10 * time.Second) {
		t.Fatal("the source's web service does not answer before any freeze")
	}
	return s
}

// answers reports whether the source's web service answers within a second.
func (s *frozenSetup) answers() bool {
	cl := http.Client{Timeout: time.Second}
	resp, err := cl.Get("http://" + s.addr + ":3000/page.txt")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// answersWithin polls answers for up to d.
func (s *frozenSetup) answersWithin(d time.Duration) bool {
	for end := time.Now().Add(d); ; {
		if s.answers() {
			return true
		}
		if time.Now().After(end) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// paused starts tine args, to stop for good at the TINE_TEST_PAUSE_AT
// point, and waits until the source is frozen; its standard error goes
// to a file (the watchdog shares it).
func (s *frozenSetup) paused(point string, args ...string) *exec.Cmd {
	s.t.Helper()
	cmd := exec.Command(tineBin, args...)
	cmd.Env = append(slices.Clone(s.vars), "TINE_TEST_PAUSE_AT="+point)
	f, err := os.Create(filepath.Join(s.t.TempDir(), "stderr"))
	if err != nil {
		s.t.Fatal(err)
	}
	defer f.Close()
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for end := time.Now().Add(60 * time.Second); !s.frozen(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			b, _ := os.ReadFile(f.Name())
			s.t.Fatalf("tine %v: the source never froze; it said: %s", args, b)
		}
	}
	return cmd
}

// frozen reports whether the source's cgroup is frozen.
func (s *frozenSetup) frozen() bool {
	for _, d := range cgroupDirs(s.src.ID) {
		if b, err := os.ReadFile(filepath.Join(d, "cgroup.events")); err == nil && strings.Contains(string(b), "frozen 1") {
			return true
		}
		if b, err := os.ReadFile(filepath.Join(d, "freezer.state")); err == nil && strings.TrimSpace(string(b)) == "FROZEN" {
			return true
		}
	}
	return false
}

// killWatchdog kills the watchdog of the source's freeze, as its record
// names it, so that only the next command can thaw it.
func (s *frozenSetup) killWatchdog() {
	s.t.Helper()
	b, err := os.ReadFile(filepath.Join(s.home, "workspaces", s.src.Workspace, "runs", s.src.ID, "frozen.json"))
	if err != nil {
		s.t.Logf("the freeze is not recorded: %v", err)
		return
	}
	var rec struct {
		Watchdog int `json:"watchdog"`
	}
	if err := json.Unmarshal(b, &rec); err != nil || rec.Watchdog == 0 {
		s.t.Fatalf("freeze record %s names no watchdog: %v", b, err)
	}
	syscall.Kill(rec.Watchdog, syscall.SIGKILL)
}

// kill SIGKILLs cmd and reaps it.
func kill(cmd *exec.Cmd) {
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
}

// forkWithChange makes a fork of the source with page.txt changed, to merge.
func (s *frozenSetup) forkWithChange() {
	s.t.Helper()
	s.ok("fork", "source", "--live", "none")
	if err := os.WriteFile(filepath.Join(s.path("source-1"), "page.txt"), []byte("fork\n"), 0o644); err != nil {
		s.t.Fatal(err)
	}
}

func TestFreeze_KilledForkThawedByNextCommand(t *testing.T) {
	s := newFrozenSetup(t)
	fork := s.paused("frozen:0", "fork", "source")
	s.killWatchdog()
	kill(fork)
	if s.answersWithin(2 * time.Second) {
		t.Fatal("the source answers with its freezer and watchdog killed: the test froze nothing")
	}
	// tine doctor, which changes nothing, says so and how it is put right.
	if r := s.tine("doctor"); !strings.Contains(r.stdout, "left over by commands that died: 1") ||
		!strings.Contains(r.stdout, "frozen  ") || !strings.Contains(r.stdout, "tine gc") {
		t.Errorf("tine doctor did not report the abandoned freeze: %v", r)
	}
	r := s.tine("ls")
	if r.code != 0 || !strings.Contains(r.stderr, "thawed source") {
		t.Errorf("tine ls did not say it thawed the source: %v", r)
	}
	if !s.answersWithin(5*time.Second) || s.frozen() {
		t.Fatal("the source is still frozen after tine ls")
	}
	if out := s.ok("exec", "source", "--", "cat", "page.txt"); out != "source\n" {
		t.Errorf("tine exec in the thawed source: %q", out)
	}
}

func TestFreeze_WatchdogThawsKilledMerge(t *testing.T) {
	s := newFrozenSetup(t)
	s.forkWithChange()
	merge := s.paused("frozen:0", "merge", "source-1")
	kill(merge)
	if !s.answersWithin(5 * time.Second) {
		t.Fatal("the merge's target stayed frozen after the merge was killed, with no command run")
	}
	if s.frozen() {
		t.Fatal("the source answers but its cgroup is frozen")
	}
}

func TestFreeze_WatchdogThawsStoppedFreezer(t *testing.T) {
	s := newFrozenSetup(t)
	s.vars = append(s.vars, "TINE_FREEZE_LIMIT=2s")
	fork := s.paused("frozen:0", "fork", "source")
	fork.Process.Signal(syscall.SIGSTOP)
	defer kill(fork)
	if s.answersWithin(time.Second) {
		t.Fatal("the source answers at once: the test froze nothing")
	}
	if !s.answersWithin(8 * time.Second) {
		t.Fatal("the source stayed frozen with its freezer stopped past TINE_FREEZE_LIMIT")
	}
}

// A merge killed while it has a fork point mounted read-only (scratch:0,
// runs/FORK/base-ID, which the changes are listed against; scratch:1,
// runs/FORK/merge-ID/base, which the plan reads) leaves that mount and its
// merge-ID directory behind. tine gc removes them, saying so, and the
// fork then discards cleanly; nothing removed them, and discard said
// "discarded" but exited 1 on the read-only file system.
func TestScratch_KilledMergeLeftoversRemoved(t *testing.T) {
	for _, point := range []string{"scratch:0", "scratch:1"} {
		t.Run(point, func(t *testing.T) {
			e, _ := liveWorkspace(t, false, map[string]string{"a.txt": "base\n"})
			e.ok("fork", "source")
			if err := os.WriteFile(filepath.Join(e.path("source-1"), "a.txt"), []byte("fork\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			var fork jsonLsRow
			for _, r := range e.ls() {
				if r.Name == "source-1" {
					fork = r
				}
			}
			dir := filepath.Join(e.home, "workspaces", fork.Workspace, "runs", fork.ID)
			cmd := exec.Command(tineBin, "merge", "source-1")
			cmd.Env = append(slices.Clone(e.vars), "TINE_TEST_PAUSE_AT="+point)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			for end := time.Now().Add(60 * time.Second); len(scratchMounts(dir)) == 0; time.Sleep(20 * time.Millisecond) {
				if time.Now().After(end) {
					kill(cmd)
					t.Fatal("the merge never mounted its fork point")
				}
			}
			kill(cmd)
			left := scratchMounts(dir)
			if r := e.tine("doctor", "--json"); !strings.Contains(r.stdout, `"kind": "scratch"`) {
				t.Errorf("tine doctor did not report the merge's leftover: %v", r)
			}
			r := e.tine("gc")
			if r.code != 0 {
				t.Fatalf("%v", r)
			}
			for _, m := range left {
				if !strings.Contains(r.stderr, "removed "+m) && !strings.Contains(r.stderr, "removed "+filepath.Dir(m)) {
					t.Errorf("tine gc did not say it removed %s: %v", m, r)
				}
			}
			if m := scratchMounts(dir); len(m) > 0 {
				t.Errorf("mounts left after tine gc: %v", m)
			}
			if ents, _ := filepath.Glob(filepath.Join(dir, "merge-*")); len(ents) > 0 {
				t.Errorf("merge scratch left after tine gc: %v", ents)
			}
			if r := e.tine("discard", "--unmerged", "--while-running", "source-1"); r.code != 0 {
				t.Errorf("discard: %v", r)
			}
		})
	}
}

// scratchMounts lists the mounts below run directory dir other than its view.
func scratchMounts(dir string) []string {
	b, _ := os.ReadFile("/proc/self/mountinfo")
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) > 4 && strings.HasPrefix(f[4], dir+"/") && f[4] != filepath.Join(dir, "view") {
			out = append(out, f[4])
		}
	}
	return out
}

// A fork point mounted by a command that still runs (tine diff, which
// reads without the workspace's lock) is left alone by the sweep.
func TestScratch_MountInUseKept(t *testing.T) {
	e, _ := liveWorkspace(t, false, map[string]string{"a.txt": "base\n"})
	e.ok("fork", "source")
	if err := os.WriteFile(filepath.Join(e.path("source-1"), "a.txt"), []byte("fork\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rows := e.ls()
	i := slices.IndexFunc(rows, func(r jsonLsRow) bool { return r.Name == "source-1" })
	dir := filepath.Join(e.home, "workspaces", rows[i].Workspace, "runs", rows[i].ID)
	cmd := exec.Command(tineBin, "diff", "source-1")
	cmd.Env = append(slices.Clone(e.vars), "TINE_TEST_PAUSE_AT=scratch:0")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer kill(cmd)
	for end := time.Now().Add(60 * time.Second); len(scratchMounts(dir)) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("tine diff never mounted the fork point")
		}
	}
	if r := e.tine("gc"); r.code != 0 || strings.Contains(r.stderr, "removed") {
		t.Errorf("tine gc with a diff running: %v", r)
	}
	if len(scratchMounts(dir)) == 0 {
		t.Error("the sweep unmounted the fork point a running tine diff reads")
	}
}
