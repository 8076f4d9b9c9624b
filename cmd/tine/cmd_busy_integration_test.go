//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/fstree"
	"github.com/tinehq/tine/httpapi"
	"github.com/tinehq/tine/internal/testkit"
	"golang.org/x/sys/unix"
)

// busyFork is what the busy-source tests read of tine fork --json.
type busyFork struct {
	jsonFork
	Seal *struct {
		Whole   bool  `json:"whole"`
		Files   int   `json:"files"`
		Bytes   int64 `json:"bytes"`
		Busy    bool  `json:"busy"`
		Running bool  `json:"running"`
		Holders []struct {
			Pid     int    `json:"pid"`
			Command string `json:"command"`
			Uses    string `json:"uses"`
		} `json:"holders"`
	} `json:"seal"`
}

// holdSource starts a shell with its cwd in dir and a file there open, as
// a developer's terminal or editor is, killed at cleanup.
func holdSource(t *testing.T, dir, file string) int {
	t.Helper()
	cmd := exec.Command("sh", "-c", "exec 3<"+file+"; exec sleep 600")
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	for range 100 { // until the shell has opened the file and become sleep
		if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", cmd.Process.Pid)); strings.TrimSpace(string(b)) == "sleep" {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return cmd.Process.Pid
}

// bigDelta gives the source (at ws) a delta larger than tine seals by
// copy when idle: n files in new directories.
func bigDelta(t *testing.T, ws string, n int) {
	t.Helper()
	for i := range n {
		p := filepath.Join(ws, "node_modules", fmt.Sprintf("p%02d", i%50), fmt.Sprintf("f%05d.js", i))
		if i%50 == i {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(p, bytes.Repeat([]byte{'x'}, 1000), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// busyWorkspace makes an overlay workspace called name, 100 files over a
// delta of n more, held by a shell as holdSource's; it returns the shell's
// pid.
func busyWorkspace(t *testing.T, e *env, name string, n int) (string, int) {
	t.Helper()
	ws := e.workspaceDir(name)
	makeFiles(t, ws, 100)
	e.ok("init", "--backend", "overlay", ws)
	bigDelta(t, ws, n)
	return ws, holdSource(t, ws, "d00/s0/f0000.txt")
}

// layerBytes is the disk used by the layer of a version.
func (e *env) layerBytes(ws, layer string) int64 {
	e.t.Helper()
	st := e.treeState(ws)
	n, err := fstree.DiskUsage(filepath.Join(e.home, "workspaces", st.Workspace.ID, "layers", layer))
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

// TestCLI_BusySourceForksCopyTheChange forks a source with a shell's cwd
// (and an open file) in it again and again: the first fork copies its
// 3,000-file delta and says why, each later one copies only what changed
// since the one before (asserted on what it copied and the disk its layer
// uses), and every fork holds exactly the source's files, through
// deletions, renames, hard links, extended attributes and a directory
// removed and made again. Before tine sealed a busy source incrementally,
// every fork copied the whole delta again.
func TestCLI_BusySourceForksCopyTheChange(t *testing.T) {
	t.Parallel()
	testkit.RequireRoot(t, rootWhy)
	e := newEnv(t)
	ws, pid := busyWorkspace(t, e, "busy", 3000)

	var f busyFork
	e.okJSON(&f, "fork", "source", "--name", "f1", "--json")
	if f.Seal == nil || !f.Seal.Busy || !f.Seal.Whole || f.Seal.Files < 3000 {
		t.Fatalf("first fork of the busy source: seal %+v, want the whole delta copied, busy", f.Seal)
	}
	found := false
	for _, h := range f.Seal.Holders {
		found = found || h.Pid == pid && h.Uses == "cwd" && h.Command == "sleep"
	}
	if !found {
		t.Errorf("first fork: holders %+v, want pid %d sleep with its cwd in the source", f.Seal.Holders, pid)
	}
	requireSameTree(t, "fork f1", mustSnapshot(t, ws), mustSnapshot(t, e.path("f1")), compareOpts{links: true})
	wholeBytes := e.layerBytes("busy", f.Version.Layers[len(f.Version.Layers)-1])

	changes := []string{
		`printf 'one line\n' >> d00/s0/f0000.txt; printf 'new\n' > node_modules/p01/new.js`,
		`rm node_modules/p02/f00002.js d00/s1/f0010.txt; mv node_modules/p03/f00003.js d00/moved.js`,
		`ln node_modules/p04/f00004.js d00/hard.js; touch xattr`,
		`rm -r node_modules/p06 d00/s2; mkdir node_modules/p06 d00/s2; printf 'again\n' > node_modules/p06/x.js`,
		`mv node_modules/p07 node_modules/p07-renamed; mv d00/s3 d00/s3-renamed; chmod 600 d00/s4/f0040.txt`,
		`printf 'both\n' > d00/hard.js; printf 'in renamed\n' > node_modules/p07-renamed/f00007.js`,
	}
	for i, script := range changes {
		hostSh(t, ws, script)
		if strings.Contains(script, "touch xattr") {
			if err := unix.Lsetxattr(filepath.Join(ws, "node_modules/p05/f00005.js"), "user.tag", []byte("v1"), 0); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(20 * time.Millisecond) // a change in the same clock tick as a seal is copied twice
		name := fmt.Sprintf("f%d", i+2)
		var g busyFork
		e.okJSON(&g, "fork", "source", "--name", name, "--json")
		if g.Seal == nil || g.Seal.Whole || g.Seal.Files > 20 || g.Seal.Bytes > 20_000 {
			t.Errorf("fork %s after %q: seal %+v, want only the change copied", name, script, g.Seal)
		}
		if got := e.layerBytes("busy", g.Version.Layers[len(g.Version.Layers)-1]); got > 200_000 || got*10 > wholeBytes {
			t.Errorf("fork %s: its layer uses %d bytes of disk, the whole delta's %d", name, got, wholeBytes)
		}
		requireSameTree(t, "fork "+name, mustSnapshot(t, ws), mustSnapshot(t, e.path(name)), compareOpts{links: true})
	}
	// With nothing changed since the last fork, the fork copies nothing
	// and makes no layer (before, an empty one each time); then a change
	// is copied alone. Each says so in a line.
	out := e.ok("fork", "source", "--name", "same")
	re := regexp.MustCompile(fmt.Sprintf(`source busy \(pid %d sleep has its cwd in it[^)]*\): nothing changed since its last seal, nothing copied`, pid))
	if !re.MatchString(out) {
		t.Errorf("tine fork with nothing changed printed %q, want a line matching %s", out, re)
	}
	hostSh(t, ws, `printf 'last\n' >> d00/s0/f0000.txt`)
	time.Sleep(20 * time.Millisecond)
	out = e.ok("fork", "source", "--name", "text")
	re = regexp.MustCompile(fmt.Sprintf(`source busy \(pid %d sleep has its cwd in it[^)]*\): copied \d+ changed files \([^)]+\) in \d+ ms`, pid))
	if !re.MatchString(out) {
		t.Errorf("tine fork printed %q, want a line matching %s", out, re)
	}
	requireSameTree(t, "fork text", mustSnapshot(t, ws), mustSnapshot(t, e.path("text")), compareOpts{links: true})
}

// TestCLI_RunningSourceForkSearchesNoProc forks a source whose own service
// holds its view: the fork says the source's commands run in it and names
// no holder, because tine knows them. Before, every such fork searched
// /proc (a readlink per process and per descriptor: 7 ms with 100
// processes, and it grows with the machine's), the running-source fork's
// extra cost in docs/benchmarks.md.
func TestCLI_RunningSourceForkSearchesNoProc(t *testing.T) {
	toml := `[[service]]
name = "ticker"
command = "while :; do sleep 0.1; done"
`
	e, _ := liveWorkspace(t, false, map[string]string{"tine.toml": toml})
	e.ok("start", "source")
	var f busyFork
	e.okJSON(&f, "fork", "source", "--live", "none", "--json")
	if f.Seal == nil || !f.Seal.Busy || !f.Seal.Running || len(f.Seal.Holders) != 0 {
		t.Fatalf("fork of a running source: seal %+v, want busy, running, no holders searched", f.Seal)
	}
	if out := e.ok("fork", "source", "--live", "none"); !strings.Contains(out, "source busy (its commands run in it)") {
		t.Errorf("tine fork printed %q, want it to say the source's commands run in it", out)
	}
}

// TestCLI_BusySourceKilledForksLoseNothing kills forks of a busy source
// (a shell's cwd and an open file in it) at every fault point of a fork
// and at random moments, after a change each time: the next command
// removes what a killed fork left, the forks made before keep their files,
// and the next fork, which stacks on the last recorded seal, holds exactly
// the source's files.
func TestCLI_BusySourceKilledForksLoseNothing(t *testing.T) {
	t.Parallel()
	testkit.RequireRoot(t, rootWhy)
	e := newEnv(t)
	ws, _ := busyWorkspace(t, e, "busykill", 2500)
	e.ok("fork", "source", "--name", "first")
	first := mustSnapshot(t, ws)
	checked := map[string]bool{}
	checkAfterKill(t, e, ws, first, checked)
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	for i := range 24 {
		hostSh(t, ws, fmt.Sprintf(`printf '%d\n' >> d00/s0/f0000.txt; printf 'k\n' > node_modules/p%02d/k%d.js; rm -f node_modules/p%02d/f%05d.js; mv node_modules/p%02d d00/p%d`,
			i, i%20, i, (i+7)%20, (i+7)%20, 20+i, i))
		want := mustSnapshot(t, ws)
		cmd := exec.Command(tineBin, "fork", "source", "--name", fmt.Sprintf("k%d", i))
		cmd.Env = e.vars
		delay := time.Duration(rng.Intn(120)) * time.Millisecond
		if i < 12 { // every fault point of a fork, then random moments
			cmd.Env = append(cmd.Env, fmt.Sprintf("TINE_TEST_KILL_AT=fork:%d", i))
			delay = time.Minute
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil && !strings.Contains(err.Error(), "killed") {
				t.Errorf("tine fork: %v\n%s", err, stderr.String())
			}
		case <-time.After(delay):
			cmd.Process.Kill()
			<-done
		}
		checkAfterKill(t, e, ws, want, checked)
		name := fmt.Sprintf("after%d", i)
		var f jsonFork
		e.okJSON(&f, "fork", "source", "--name", name, "--json")
		requireSameTree(t, "fork "+name, want, mustSnapshot(t, e.path(name)), compareOpts{links: true})
		checked[f.Forks[0].ID] = true
		if rng.Intn(3) == 0 {
			e.ok("discard", name) // a chain whose forks are gone still serves
		}
	}
	requireSameTree(t, "fork first at the end", first, mustSnapshot(t, e.path("first")), compareOpts{links: true})
}

// TestServe_BusySourceForksWalkOnlyTheChange forks a busy source through
// the real tine serve, whose change tracker tells each seal which
// directories changed: after the first fork, a fork after a change in
// two of the delta's 50 directories is sealed by a walk of those alone
// (seal.tracked), copies only the change, and holds exactly the source's
// files, through a write, a deletion, a chmod, an extended attribute and
// a new directory. Before, every seal walked the whole delta.
func TestServe_BusySourceForksWalkOnlyTheChange(t *testing.T) {
	t.Parallel()
	testkit.RequireRoot(t, rootWhy)
	e := newEnv(t)
	ws, _ := busyWorkspace(t, e, "tracked", 3000)
	d := e.serve()
	fork := func(name string) engine.ForkResult { t.Helper(); return d.forkSource(t, "tracked", name) }
	// The daemon may have sealed the busy delta in the background already.
	if fr := fork("t1"); fr.Seal == nil || !(fr.Seal.Whole || fr.Seal.Presealed) || !fr.Seal.Busy {
		t.Fatalf("first fork: seal %+v, want the whole busy delta copied", fr.Seal)
	}
	changes := []string{
		`printf 'one line\n' >> node_modules/p01/f00001.js; rm node_modules/p02/f00002.js`,
		`chmod 600 node_modules/p03/f00003.js; mkdir node_modules/p01/sub; printf 'x\n' > node_modules/p01/sub/new.js`,
		`setfattr -n user.tag -v v1 node_modules/p04/f00004.js 2>/dev/null || printf 'y\n' >> node_modules/p04/f00004.js`,
	}
	for i, script := range changes {
		hostSh(t, ws, script)
		time.Sleep(20 * time.Millisecond) // a change in the same clock tick as a seal is copied twice
		name := fmt.Sprintf("t%d", i+2)
		fr := fork(name)
		if fr.Seal == nil || fr.Seal.Whole || !fr.Seal.Tracked || fr.Seal.Files > 20 {
			t.Errorf("fork %s after %q: seal %+v, want a tracked seal copying only the change", name, script, fr.Seal)
		}
		requireSameTree(t, "fork "+name, mustSnapshot(t, ws), mustSnapshot(t, e.path(name)), compareOpts{links: true})
	}
}

// TestServe_BusySourceTrackedForAUser is the tracked seal for a normal
// user through the system daemon: their source (a 3,000-file delta), held
// by a shell with its
// cwd in it, forked after a change copies only the change, with
// seal.tracked, and the fork holds exactly the source's files.
func TestServe_BusySourceTrackedForAUser(t *testing.T) {
	e, ann, _, dir := userWorkspace(t)
	ann.ok(dir, "init", ".")
	ann.ok(dir, "exec", "source", "--", "sh", "-c",
		`for d in $(seq 0 29); do mkdir -p node_modules/p$d; for f in $(seq 0 99); do echo $d$f > node_modules/p$d/f$f.js; done; done`)
	holdSource(t, dir, "node_modules/p0/f0.js")
	var f busyFork
	ann.okJSON(dir, &f, "fork", "source", "--name", "u1", "--json")
	if f.Seal == nil || !f.Seal.Busy {
		t.Fatalf("first fork: seal %+v, want a busy seal", f.Seal)
	}
	ann.ok(dir, "exec", "source", "--", "sh", "-c", `echo changed >> node_modules/p3/f3.js; rm node_modules/p4/f4.js`)
	time.Sleep(20 * time.Millisecond)
	var g struct {
		busyFork
		Seal *struct {
			Whole   bool `json:"whole"`
			Files   int  `json:"files"`
			Tracked bool `json:"tracked"`
		} `json:"seal"`
	}
	ann.okJSON(dir, &g, "fork", "source", "--name", "u2", "--json")
	if g.Seal == nil || g.Seal.Whole || !g.Seal.Tracked || g.Seal.Files > 10 {
		t.Fatalf("fork after a change: seal %+v, want a tracked seal copying only the change", g.Seal)
	}
	requireSameTree(t, "fork u2", mustSnapshot(t, dir), mustSnapshot(t, e.path("u2")), compareOpts{links: true})
}

// forkSource forks workspace ws's source once, as name, through the
// daemon's API.
func (d *daemon) forkSource(t *testing.T, ws, name string) engine.ForkResult {
	t.Helper()
	var fr engine.ForkResult
	body, _ := json.Marshal(httpapi.ForkRequest{Copies: 1, Name: name})
	if code := d.do(t, "POST", "/v1/runs/"+ws+"%2Fsource/fork", string(body), &fr); code != 201 {
		t.Fatalf("fork %s through the daemon: status %d", name, code)
	}
	return fr
}

// sealedVersions returns the ids of the versions the daemon sealed in the
// background in workspace ws.
func (e *env) sealedVersions(ws string) []string {
	e.t.Helper()
	var out []string
	for _, v := range e.treeState(ws).Versions {
		if v.Kind == "sealed" {
			out = append(out, v.ID)
		}
	}
	return out
}

// version returns version id of workspace ws, as tine tree --json lists it.
func (e *env) version(ws, id string) jsonVersion {
	e.t.Helper()
	for _, v := range e.treeState(ws).Versions {
		if v.ID == id {
			return v
		}
	}
	e.t.Fatalf("tine tree --json %s lists no version %s", ws, id)
	return jsonVersion{}
}

// waitSealed waits, up to a minute, for the daemon to seal workspace ws in
// the background anew (a sealed version not in seen), and returns the
// seals' ids.
func (e *env) waitSealed(ws string, seen []string) []string {
	e.t.Helper()
	for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		ids := e.sealedVersions(ws)
		for _, id := range ids {
			if !slices.Contains(seen, id) {
				return ids
			}
		}
	}
	e.t.Fatalf("the daemon did not seal %s in the background anew (seen %q)", ws, seen)
	return nil
}

// TestServe_BusySourcePresealed is the daemon's background seal of a busy
// source (a shell with its cwd and a file open in it, a 3,000-file
// delta): with nobody forking, the daemon seals the delta once writes
// settle, so the first fork copies nothing of it; after ten files change,
// it seals again, and the next fork copies nothing of them either. Each
// fork holds exactly the source's files, each fork drops the background
// seal it stacked on (its version has the seal's layers), and tine tree
// leaves the background seals out (its --json lists them). Before, every first fork
// of a busy source copied its whole delta, and each later one the change
// since the last fork.
func TestServe_BusySourcePresealed(t *testing.T) {
	t.Parallel()
	testkit.RequireRoot(t, rootWhy)
	e := newEnv(t)
	ws, _ := busyWorkspace(t, e, "pre", 3000)
	d := e.serve()
	defer d.stop(t)
	fork := func(name string) engine.ForkResult { t.Helper(); return d.forkSource(t, "pre", name) }
	seals := e.waitSealed(ws, nil)
	fr := fork("p1")
	if fr.Seal == nil || !fr.Seal.Presealed || fr.Seal.Whole || !fr.Seal.Busy || fr.Seal.Files > 5 {
		t.Errorf("the first fork after the background seal: seal %+v, want one stacked on it copying nothing of the delta", fr.Seal)
	}
	requireSameTree(t, "fork p1", mustSnapshot(t, ws), mustSnapshot(t, e.path("p1")), compareOpts{links: true})

	var script strings.Builder
	for i := range 10 {
		fmt.Fprintf(&script, "printf 'changed\\n' >> node_modules/p%02d/f%05d.js; ", i, i)
	}
	hostSh(t, ws, script.String())
	if after := e.sealedVersions(ws); len(after) != 0 {
		t.Errorf("the fork left the background seal it stacked on: %q (of %q)", after, seals)
	}
	seals = e.waitSealed(ws, seals)
	if out := e.ok("tree", ws); strings.Contains(out, " sealed ") {
		t.Errorf("tine tree lists the background seals:\n%s", out)
	}
	sealed := e.version(ws, seals[len(seals)-1])
	fr = fork("p2")
	if fr.Seal == nil || !fr.Seal.Presealed || !fr.Seal.Unchanged || fr.Seal.Files != 0 {
		t.Errorf("the fork after ten files changed and the daemon sealed them: seal %+v, want nothing left to copy", fr.Seal)
	}
	// Nothing changed since the background seal: the fork point is that
	// seal's layers, not a new empty layer and the delta's manifest again.
	if !slices.Equal(fr.Version.Layers, sealed.Layers) {
		t.Errorf("the fork point of a source unchanged since its background seal has layers %q, want the seal's %q", fr.Version.Layers, sealed.Layers)
	}
	requireSameTree(t, "fork p2", mustSnapshot(t, ws), mustSnapshot(t, e.path("p2")), compareOpts{links: true})
	if fr3 := fork("p3"); fr3.Seal == nil || !fr3.Seal.Unchanged || !slices.Equal(fr3.Version.Layers, sealed.Layers) {
		t.Errorf("a second fork with nothing changed: seal %+v, layers %q, want the same layers %q", fr3.Seal, fr3.Version.Layers, sealed.Layers)
	}
	requireSameTree(t, "fork p3", mustSnapshot(t, ws), mustSnapshot(t, e.path("p3")), compareOpts{links: true})
	if left := e.sealedVersions(ws); len(left) != 0 {
		t.Errorf("the seals the forks superseded are kept: %q", left)
	}
}
