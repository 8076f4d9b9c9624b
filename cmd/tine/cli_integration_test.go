//go:build linux

package main

// End-to-end tests of the tine binary: they build it once (TestMain), give
// every test its own state directory (TINE_HOME) and workspace, and check
// what each command leaves on disk, in the mounts and in its JSON against
// "oracles": plain copies of the workspace on which the same shell scripts
// run. The overlay backend needs root; without it those tests skip.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tinehq/tine/fstree"
	"github.com/tinehq/tine/internal/testkit"

	"golang.org/x/sys/unix"
)

// forkScript is what one fork of the main scenario does at the workspace path.
type forkScript struct {
	approach string
	script   string
}

// mainForks modify, delete, add, rename a directory, chmod, retarget a
// symlink and change types: each fork something else, two of them the same
// file. They touch only d00-d02, so 201 generated files are enough.
var mainForks = []forkScript{
	{"rewrite", `printf 'fork1 was here\n' > d00/s0/f0000.txt
rm d01/s1/f0110.txt
mkdir added && printf 'added by fork1\n' > added/one.txt
mv d02 d02-renamed
chmod 644 run.sh`},
	{"patch", `printf 'fork two changed this file, and it is longer\n' > d00/s0/f0000.txt
rm bin/blob1.bin
mkdir -p new/deep/er && printf 'x\n' > new/deep/er/x.txt
rm linkdir && ln -s d01 linkdir
chmod 700 d01/s3
printf 'still secret, changed\n' > private.txt`},
	{"minimal", `printf '# fork3\n' > README.md
rm -r d00/s4
printf '#!/bin/sh\necho new\n' > d01/s5/new.sh && chmod 755 d01/s5/new.sh
rm d01/s6/f0160.txt && mkdir d01/s6/f0160.txt && printf 'inner\n' > d01/s6/f0160.txt/inner.txt
rm link-readme && printf 'now a file\n' > link-readme`},
}

// laterScript is what fork 1 does after its checkpoint.
const laterScript = `printf 'later\n' > d00/s0/f0000.txt
printf 'later\n' > later.txt
rm -r added`

// TestCLI_Scenario runs the whole life of a git workspace: init, a group of
// three forks writing different things, isolation at the same absolute
// path, diff, git status, checkpoint and rollback both ways, discard of a
// run and of a group, the records (ls, tree, log), and release.
func TestCLI_Scenario(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		backend string
		files   int
	}{
		{"overlay", 2000},
		{"copy", 300},
	} {
		t.Run(tc.backend, func(t *testing.T) {
			t.Parallel()
			testkit.RequireRoot(t, rootWhy)
			s := newScenario(t, tc.backend, tc.files)
			s.checkIsolation()
			s.checkDiffs()
			s.checkGitStatus()
			s.checkCheckpointRollback()
			s.checkDiscard()
			s.checkRecords()
			s.checkRelease()
		})
	}
}

// scenario is the state of TestCLI_Scenario.
type scenario struct {
	*env
	backend  string
	ws       string
	base     tree   // the workspace as committed, before init
	baseDir  string // the repository it was copied from (read only)
	init     jsonInit
	fork     jsonFork
	oracles  []string // what each fork must hold
	want     []tree   // their trees
	cp       jsonVersion
	rb1, rb2 jsonRollback
}

// newScenario generates the repository, inits it, forks it three ways and
// lets every fork (and its oracle) run its script.
func newScenario(t *testing.T, backend string, files int) *scenario {
	s := &scenario{env: newEnv(t), backend: backend}
	s.ws = s.workspaceDir("repo")
	s.baseDir, s.base = makeRepo(t, s.ws, files)

	s.okJSON(&s.init, "init", "--backend", backend, "--json", s.ws)
	if w := s.init.Workspace; w.Path != s.ws || w.Backend != backend || w.Name != "repo" || s.init.Run.Name != "source" {
		t.Fatalf("tine init --json: workspace %+v, run %+v", w, s.init.Run)
	}
	requireSameTree(t, "the workspace path after init", s.base, mustSnapshot(t, s.ws), compareOpts{times: true, links: true})

	args := []string{"fork", "source", "-n", "3", "--json"}
	for _, f := range mainForks {
		args = append(args, "--approach", f.approach)
	}
	s.okJSON(&s.fork, args...)
	s.checkForkResult()
	for i, f := range mainForks {
		s.oracles = append(s.oracles, oracle(t, s.baseDir))
		hostSh(t, s.oracles[i], f.script)
		s.want = append(s.want, mustSnapshot(t, s.oracles[i]))
		s.execSh(s.fork.Forks[i].Name, f.script)
	}
	return s
}

func (s *scenario) forkName(i int) string { return s.fork.Forks[i].Name }

func (s *scenario) checkForkResult() {
	t, f := s.t, s.fork
	if f.Parent.ID != s.init.Run.ID || f.Version.Kind != "fork" || f.Version.Run != s.init.Run.ID || f.Version.Parent != s.init.Run.Base {
		t.Errorf("fork --json: parent %+v, version %+v", f.Parent, f.Version)
	}
	if f.Group.Parent != s.init.Run.ID || f.Group.Version != f.Version.ID || len(f.Forks) != 3 {
		t.Fatalf("fork --json: group %+v, %d forks", f.Group, len(f.Forks))
	}
	head := strings.TrimSpace(hostCmd(t, s.baseDir, "git", "rev-parse", "HEAD"))
	for i, r := range f.Forks {
		want := jsonRun{ID: r.ID, Workspace: s.init.Workspace.ID, Name: fmt.Sprintf("source-%d", i+1), Parent: s.init.Run.ID,
			Role: "fork", State: "active", Base: f.Version.ID, Origin: f.Version.ID, Group: f.Group.ID,
			Approach: mainForks[i].approach, GitHead: head}
		if r != want {
			t.Errorf("fork %d: %+v, want %+v", i, r, want)
		}
	}
}

// checkIsolation reads every run's files at the same absolute path, inside
// the run, and through tine path on the host.
func (s *scenario) checkIsolation() {
	t := s.t
	if got := s.path("source"); got != s.ws {
		t.Errorf("tine path source = %q, want %q", got, s.ws)
	}
	requireSameTree(t, "the source at the workspace path", s.base, mustSnapshot(t, s.ws), compareOpts{})
	requireSameTree(t, "the source inside tine exec", s.base, s.walkIn("source", s.ws), compareOpts{})
	for i := range mainForks {
		name := s.forkName(i)
		want := s.want[i]
		p := s.path(name)
		if !fstree.Within(p, s.home) {
			t.Errorf("tine path %s = %q, not under TINE_HOME %s", name, p, s.home)
		}
		requireSameTree(t, "tine path "+name, want, mustSnapshot(t, p), compareOpts{})
		requireSameTree(t, name+" inside tine exec", want, s.walkIn(name, s.ws), compareOpts{})
	}
	for _, file := range []string{"d00/s0/f0000.txt", "README.md", "link-readme"} {
		s.requireCat("source", file, s.baseDir)
		for i := range mainForks {
			s.requireCat(s.forkName(i), file, s.oracles[i])
		}
		if b, err := os.ReadFile(filepath.Join(s.ws, file)); err != nil || string(b) != readFile(t, s.baseDir, file) {
			t.Errorf("the host reads %q at %s/%s, want the source's %q (%v)", b, s.ws, file, readFile(t, s.baseDir, file), err)
		}
	}
	s.requireMounts(3)
}

// requireCat checks what cat of the workspace path prints inside run.
func (s *scenario) requireCat(run, file, oracleDir string) {
	s.t.Helper()
	want := readFile(s.t, oracleDir, file)
	if got := s.ok("exec", run, "--", "cat", filepath.Join(s.ws, file)); got != want {
		s.t.Errorf("tine exec %s -- cat %s/%s printed %q, want %q", run, s.ws, file, got, want)
	}
}

func readFile(t *testing.T, dir, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// requireMounts checks the mounts below the test's temp root: for overlay
// the workspace path, the source's view and each live fork's view; for a
// flat backend none.
func (s *scenario) requireMounts(liveForks int) {
	s.t.Helper()
	mps := mountPoints(s.tmp)
	want := 0
	if s.backend == "overlay" {
		want = 2 + liveForks
		if !slices.Contains(mps, s.ws) {
			s.t.Errorf("the workspace path %s is not mounted", s.ws)
		}
	}
	if len(mps) != want {
		s.t.Errorf("%d mounts below %s, want %d: %q", len(mps), s.tmp, want, mps)
	}
}

// checkDiffs compares tine diff (--json, --stat, --patch) with the oracles.
func (s *scenario) checkDiffs() {
	t := s.t
	requireChanges(t, "source", []change{}, s.changes("source"))
	for i := range mainForks {
		name := s.forkName(i)
		want := expectedChanges(s.base, s.want[i])
		requireChanges(t, name, want, s.changes(name))
		s.checkStat(name, want)
		s.checkPatch(name, want)
	}
}

func (s *scenario) checkStat(name string, want []change) {
	t := s.t
	var st struct {
		Added       int   `json:"added"`
		Modified    int   `json:"modified"`
		Deleted     int   `json:"deleted"`
		TypeChanged int   `json:"type_changed"`
		BytesBefore int64 `json:"bytes_before"`
		BytesAfter  int64 `json:"bytes_after"`
	}
	s.okJSON(&st, "diff", name, "--stat", "--json")
	var a, m, d, tc int
	var before, after int64
	for _, c := range want {
		switch c.Kind {
		case "added":
			a++
		case "modified":
			m++
		case "deleted":
			d++
		case "type_changed":
			tc++
		}
		before, after = before+c.OldSize, after+c.Size
	}
	if st.Added != a || st.Modified != m || st.Deleted != d || st.TypeChanged != tc || st.BytesBefore != before || st.BytesAfter != after {
		t.Errorf("tine diff %s --stat --json = %+v, want %d added, %d modified, %d deleted, %d type changed, %d -> %d bytes",
			name, st, a, m, d, tc, before, after)
	}
	line := fmt.Sprintf("%d added, %d modified, %d deleted, %d type changed; %d bytes before, %d after\n", a, m, d, tc, before, after)
	if got := s.ok("diff", name, "--stat"); got != line {
		t.Errorf("tine diff %s --stat = %q, want %q", name, got, line)
	}
}

// checkPatch checks that --patch names only changed paths, every changed
// text file, and shows the new content of a modified one.
func (s *scenario) checkPatch(name string, want []change) {
	t := s.t
	patch := s.ok("diff", name, "--patch")
	changed := map[string]bool{}
	for _, c := range want {
		changed[c.Path] = true
	}
	for _, line := range strings.Split(patch, "\n") {
		var p string
		switch {
		case strings.HasPrefix(line, "--- a/"), strings.HasPrefix(line, "+++ b/"):
			p = line[6:]
		case strings.HasPrefix(line, "diff "):
			p, _, _ = strings.Cut(line[5:], ": ")
		default:
			continue
		}
		if !changed[p] {
			t.Errorf("tine diff %s --patch names %q, which did not change", name, p)
		}
	}
	for _, c := range want {
		if c.Type != "file" || c.Kind == "modified" && c.Size == c.OldSize {
			continue
		}
		if !strings.Contains(patch, "/"+c.Path+"\n") && !strings.Contains(patch, "diff "+c.Path+": ") {
			t.Errorf("tine diff %s --patch does not mention %s (%s)", name, c.Path, c.Kind)
		}
	}
	if !strings.Contains(patch, "--- a/d00/s0/f0000.txt\n+++ b/d00/s0/f0000.txt\n") && name != s.forkName(2) {
		t.Errorf("tine diff %s --patch has no hunk for d00/s0/f0000.txt:\n%s", name, clip(patch))
	}
}

// checkGitStatus compares git status inside each run with git status of
// its oracle; the source's tree stays clean on the host and inside.
func (s *scenario) checkGitStatus() {
	t := s.t
	if got := hostCmd(t, s.ws, gitStatus...); got != "" {
		t.Errorf("git status at the workspace path on the host: %q, want clean", got)
	}
	if got := s.ok(append([]string{"exec", "source", "--"}, gitStatus...)...); got != "" {
		t.Errorf("git status inside the source: %q, want clean", got)
	}
	for i := range mainForks {
		name := s.forkName(i)
		want := sortedLines(hostCmd(t, s.oracles[i], gitStatus...))
		got := sortedLines(s.ok(append([]string{"exec", name, "--"}, gitStatus...)...))
		if len(want) == 0 || !slices.Equal(want, got) {
			t.Errorf("git status inside %s:\n%s", name, lineDiff(want, got))
		}
	}
}

// checkCheckpointRollback checkpoints fork 1, changes it further, rolls
// back to the checkpoint's label, then forward to the saved version.
func (s *scenario) checkCheckpointRollback() {
	t := s.t
	name, f := s.forkName(0), s.fork.Forks[0]
	s.okJSON(&s.cp, "checkpoint", name, "--label", "cp-1", "--json")
	if s.cp.Kind != "checkpoint" || s.cp.Label != "cp-1" || s.cp.Run != f.ID || s.cp.Parent != s.fork.Version.ID {
		t.Errorf("checkpoint --json: %+v", s.cp)
	}
	hostSh(t, s.oracles[0], laterScript) // its tree at the checkpoint is s.want[0]
	s.execSh(name, laterScript)
	laterTree := mustSnapshot(t, s.oracles[0])
	requireSameTree(t, name+" after its later changes", laterTree, mustSnapshot(t, s.path(name)), compareOpts{})

	s.okJSON(&s.rb1, "rollback", name, "--to", "cp-1", "--json")
	if s.rb1.To.ID != s.cp.ID || s.rb1.Run.Base != s.cp.ID || s.rb1.Run.Origin != s.fork.Version.ID ||
		s.rb1.Saved.Kind != "saved" || s.rb1.Saved.Run != f.ID || s.rb1.Saved.ID == s.cp.ID {
		t.Errorf("rollback --to cp-1 --json: %+v", s.rb1)
	}
	atCheckpoint := s.want[0]
	requireSameTree(t, name+" rolled back to cp-1", atCheckpoint, mustSnapshot(t, s.path(name)), compareOpts{})
	requireSameTree(t, name+" rolled back to cp-1, inside", atCheckpoint, s.walkIn(name, s.ws), compareOpts{})
	requireChanges(t, name+" rolled back to cp-1", expectedChanges(s.base, atCheckpoint), s.changes(name))

	s.okJSON(&s.rb2, "rollback", name, "--to", s.rb1.Saved.ID, "--json")
	if s.rb2.To.ID != s.rb1.Saved.ID || s.rb2.Run.Base != s.rb1.Saved.ID || s.rb2.Saved.Kind != "saved" {
		t.Errorf("rollback --to %s --json: %+v", s.rb1.Saved.ID, s.rb2)
	}
	requireSameTree(t, name+" rolled forward to the saved version", laterTree, mustSnapshot(t, s.path(name)), compareOpts{})
	requireSameTree(t, name+" rolled forward, inside", laterTree, s.walkIn(name, s.ws), compareOpts{})
	requireChanges(t, name+" rolled forward", expectedChanges(s.base, laterTree), s.changes(name))
	requireSameTree(t, "the source after the rollbacks", s.base, mustSnapshot(t, s.ws), compareOpts{})
	s.requireMounts(3)
}

// checkDiscard: a fork with changes is refused (6) and stays intact;
// --force discards it; the group is refused, then discarded with --force.
func (s *scenario) checkDiscard() {
	t := s.t
	two := s.forkName(1)
	before := s.state()
	requireOneLineError(t, s.tine("discard", two), exitUnmerged)
	requireSameState(t, "a refused discard", before, s.state())
	requireSameTree(t, two+" after a refused discard", s.want[1], mustSnapshot(t, s.path(two)), compareOpts{})

	view := s.path(two)
	var out []jsonRun
	s.okJSON(&out, "discard", two, "--unmerged", "--while-running", "--json")
	if len(out) != 1 || out[0].Name != two || out[0].State != "discarded" {
		t.Errorf("discard --force --json: %+v", out)
	}
	if fileExists(view) {
		t.Errorf("%s's view %s is still there after discard", two, view)
	}
	requireOneLineError(t, s.tine("path", two), exitState)
	s.requireMounts(2)

	g := s.fork.Group.ID
	before = s.state()
	requireOneLineError(t, s.tine("discard", g), exitUnmerged)
	requireSameState(t, "a refused discard of the group", before, s.state())
	s.okJSON(&out, "discard", g, "--unmerged", "--while-running", "--json")
	var names []string
	for _, r := range out {
		names = append(names, r.Name+" "+r.State)
	}
	if want := []string{s.forkName(0) + " discarded", s.forkName(2) + " discarded"}; !slices.Equal(names, want) {
		t.Errorf("discard %s --force --json discarded %q, want %q", g, names, want)
	}
	requireOneLineError(t, s.tine("discard", g, "--unmerged", "--while-running"), exitState)
	s.requireMounts(0)
	runs, _ := os.ReadDir(filepath.Join(s.home, "workspaces", s.init.Workspace.ID, "runs"))
	if len(runs) != 1 || runs[0].Name() != s.init.Run.ID {
		t.Errorf("run directories left after discarding every fork: %v", runs)
	}
	requireSameTree(t, "the source after the discards", s.base, mustSnapshot(t, s.ws), compareOpts{})
}

// checkRecords checks tine ls, tree and log after everything above.
func (s *scenario) checkRecords() {
	t := s.t
	src := s.init.Run
	if rows := s.ls(); len(rows) != 1 || rows[0].ID != src.ID || rows[0].Path != s.ws || rows[0].State != "active" {
		t.Errorf("tine ls --json after the discards: %+v", rows)
	}
	rows := s.ls("--all")
	if len(rows) != 4 {
		t.Fatalf("tine ls --all --json: %d rows, want 4: %+v", len(rows), rows)
	}
	for _, r := range rows[1:] {
		if r.State != "discarded" || r.ParentName != "source" || r.Parent != src.ID || r.Path != "" || r.WorkspaceName != "repo" || r.Workspace != src.Workspace {
			t.Errorf("tine ls --all --json row %+v", r)
		}
	}
	st := s.treeState("repo")
	s.checkVersions(st)
	if len(st.Groups) != 1 || st.Groups[0] != s.fork.Group {
		t.Errorf("tine tree --json groups %+v, want %+v", st.Groups, s.fork.Group)
	}
	if one := runByName(st.Runs, s.forkName(0)); one.Base != s.rb1.Saved.ID || one.Origin != s.fork.Version.ID || one.State != "discarded" {
		t.Errorf("tine tree --json: %+v", one)
	}
	s.checkLog()
}

func (s *scenario) checkVersions(st jsonState) {
	t := s.t
	src, one, fv := s.init.Run.ID, s.fork.Forks[0].ID, s.fork.Version.ID
	// The checkpoint's delta is small, so it is copied and leaves the run's
	// base on the fork point (only a large delta is sealed by rename, which
	// rebases the run); the rollback moved the base to cp-1.
	firstSaved := fv
	want := map[string]jsonVersion{
		s.init.Run.Base: {Run: src, Kind: "init"},
		fv:              {Run: src, Kind: "fork", Parent: s.init.Run.Base},
		s.cp.ID:         {Run: one, Kind: "checkpoint", Parent: fv, Label: "cp-1"},
		s.rb1.Saved.ID:  {Run: one, Kind: "saved", Parent: firstSaved, Label: "before rollback to " + s.cp.ID},
		s.rb2.Saved.ID:  {Run: one, Kind: "saved", Parent: s.cp.ID, Label: "before rollback to " + s.rb1.Saved.ID},
	}
	if len(st.Versions) != len(want) {
		t.Errorf("tine tree --json: %d versions, want %d", len(st.Versions), len(want))
	}
	for _, v := range st.Versions {
		w, ok := want[v.ID]
		if !ok || v.Run != w.Run || v.Kind != w.Kind || v.Parent != w.Parent || v.Label != w.Label || v.Workspace != s.init.Workspace.ID {
			t.Errorf("tine tree --json version %+v, want %+v", v, w)
		}
	}
}

// checkLog checks fork 1's events, oldest first, and their details.
func (s *scenario) checkLog() {
	t := s.t
	// Process starts and stops (tine exec launches a supervisor; a rollback
	// stops it) are logged too; this checks the file history.
	evs := slices.DeleteFunc(s.events(s.forkName(0)), func(ev jsonEvent) bool { return ev.Kind == "start" || ev.Kind == "stop" })
	var kinds []string
	for i, ev := range evs {
		kinds = append(kinds, ev.Kind)
		if i > 0 && (ev.Seq <= evs[i-1].Seq || ev.Time.Before(evs[i-1].Time)) {
			t.Errorf("tine log: event %d (%s) is not after event %d", i, ev.Kind, i-1)
		}
	}
	want := []string{"fork", "checkpoint", "saved", "rollback", "saved", "rollback", "discard"}
	if !slices.Equal(kinds, want) {
		t.Fatalf("tine log %s --json kinds %q, want %q", s.forkName(0), kinds, want)
	}
	details := []map[string]any{
		{"parent": s.init.Run.ID, "version": s.fork.Version.ID, "group": s.fork.Group.ID, "approach": "rewrite"},
		{"version": s.cp.ID, "label": "cp-1"},
		{"version": s.rb1.Saved.ID},
		{"to": s.cp.ID, "saved": s.rb1.Saved.ID},
		{"version": s.rb2.Saved.ID},
		{"to": s.rb1.Saved.ID, "saved": s.rb2.Saved.ID},
		{"force": true},
	}
	for i, want := range details {
		var got map[string]any
		if err := json.Unmarshal(evs[i].Detail, &got); err != nil {
			t.Errorf("event %s: detail %s: %v", evs[i].Kind, evs[i].Detail, err)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("event %s: detail %s = %v, want %v", evs[i].Kind, k, got[k], v)
			}
		}
	}
	var srcKinds []string
	for _, ev := range s.events("source") {
		if ev.Kind != "start" && ev.Kind != "stop" {
			srcKinds = append(srcKinds, ev.Kind)
		}
	}
	if !slices.Equal(srcKinds, []string{"init", "forked"}) {
		t.Errorf("tine log source --json kinds %q, want init, forked", srcKinds)
	}
}

// checkRelease releases the workspace: plain files exactly as the source
// saw them, no mounts, no records, no state left.
func (s *scenario) checkRelease() {
	t := s.t
	before := mustSnapshot(t, s.ws)
	if got := s.ok("release", s.ws); !strings.HasPrefix(got, "released repo: ") {
		t.Errorf("tine release printed %q", got)
	}
	after := mustSnapshot(t, s.ws)
	requireSameTree(t, "the workspace after release", before, after, compareOpts{times: true, links: true})
	requireSameTree(t, "the workspace after release, against the oracle", s.base, after, compareOpts{links: true})
	if mps := mountPoints(s.tmp); len(mps) != 0 {
		t.Errorf("mounts left after release: %q", mps)
	}
	if rows := s.ls("--all"); len(rows) != 0 {
		t.Errorf("tine ls --all --json after release: %+v", rows)
	}
	if left, _ := os.ReadDir(filepath.Join(s.home, "workspaces")); len(left) != 0 {
		t.Errorf("state left after release: %v", left)
	}
}

// TestCLI_ForkChain forks a fork of a fork: each level's view holds every
// change its ancestors made before the fork and none made after; the trees
// are compared whole (types, modes, owners, contents, link targets), on the
// host and inside each run, and each run's diff lists only its own changes.
func TestCLI_ForkChain(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"overlay", "copy"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			testkit.RequireRoot(t, rootWhy)
			testForkChain(t, backend)
		})
	}
}

// chainStep is one step of the chain: a run writes (script), or forks
// (forkAs names the new fork).
type chainStep struct {
	run, script, forkAs string
}

var chainSteps = []chainStep{
	{run: "source", script: `printf 's1\n' > d00/s0/f0000.txt; rm d00/s1/f0010.txt; mkdir -p newS/in && printf 'S\n' > newS/in/s.txt`},
	{run: "source", forkAs: "A"},
	{run: "source", script: `printf 's2 after A\n' > d00/s0/f0000.txt; printf 'late\n' > s2.txt; rm -r d00/s2`},
	{run: "A", script: `rm -r d00/s3; mkdir d00/s3 && printf 'opaque\n' > d00/s3/only.txt; rm d00/s4/f0040.txt; printf 'A\n' > newA`},
	{run: "A", forkAs: "B"},
	{run: "A", script: `printf 'a2\n' > a2.txt; printf 'A changed after B\n' > newA; chmod 600 d00/s5/f0050.txt`},
	{run: "B", script: `rm newA && mkdir newA && printf 'B\n' > newA/inside; ln -s newS d00/s4/f0040.txt; chmod 600 d00/s0/f0000.txt; mv d00/s6 d00/s6-moved; mkfifo fifo`},
	{run: "B", forkAs: "C"},
	{run: "B", script: `printf 'b2\n' > b2.txt; rm -r d00/s3; printf 'B after C\n' > d00/s0/f0000.txt`},
	{run: "C", script: `rm -r newA && printf 'C\n' > newA; printf 'c1\n' > d00/s0/f0000.txt; rm -r newS; rm fifo; printf 'again\n' > d00/s1/f0010.txt`},
}

func testForkChain(t *testing.T, backend string) {
	e := newEnv(t)
	ws := e.workspaceDir("chain")
	makeFiles(t, ws, 100)
	oracles := map[string]string{"source": oracle(t, ws)}
	forkPoints := map[string]tree{"source": mustSnapshot(t, oracles["source"])}
	e.ok("init", "--backend", backend, ws)
	for _, st := range chainSteps {
		if st.forkAs == "" {
			hostSh(t, oracles[st.run], st.script)
			e.execSh(st.run, st.script)
			continue
		}
		var f jsonFork
		e.okJSON(&f, "fork", st.run, "--name", st.forkAs, "--json")
		if len(f.Forks) != 1 || f.Forks[0].Name != st.forkAs || f.Parent.Name != st.run {
			t.Fatalf("fork %s --name %s: %+v", st.run, st.forkAs, f)
		}
		oracles[st.forkAs] = oracle(t, oracles[st.run])
		forkPoints[st.forkAs] = mustSnapshot(t, oracles[st.forkAs])
	}
	for _, run := range []string{"source", "A", "B", "C"} {
		want := mustSnapshot(t, oracles[run])
		requireSameTree(t, run+" on the host", want, mustSnapshot(t, e.path(run)), compareOpts{})
		requireSameTree(t, run+" inside tine exec", want, e.walkIn(run, ws), compareOpts{})
		requireChanges(t, run, expectedChanges(forkPoints[run], want), e.changes(run))
	}
	parents := map[string]string{}
	for _, r := range e.ls() {
		parents[r.Name] = r.ParentName
	}
	if want := map[string]string{"source": "", "A": "source", "B": "A", "C": "B"}; fmt.Sprint(parents) != fmt.Sprint(want) {
		t.Errorf("parents in tine ls --json: %v, want %v", parents, want)
	}
}

// TestCLI_DeepChain forks past the overlay backend's maximum stack depth
// (32 layers, then a version is compacted into one layer), each level
// adding a file and changing one, and reads the last level back exactly.
func TestCLI_DeepChain(t *testing.T) {
	t.Parallel()
	testkit.RequireRoot(t, rootWhy)
	e := newEnv(t)
	ws := e.workspaceDir("deep")
	makeFiles(t, ws, 20)
	orc := oracle(t, ws)
	e.ok("init", "--backend", "overlay", ws)
	// Level i runs script i, then forks l(i): l15 holds scripts 0-16 (it
	// ran the 17th before l16 was forked from it) whatever its descendants do.
	run, scripts := "source", make([]string, 34)
	for i := range scripts {
		scripts[i] = fmt.Sprintf(`printf '%d\n' > level-%02d; printf 'level %d\n' > d00/s0/f0000.txt; rm -f level-%02d`, i, i, i, i-3)
		e.execSh(run, scripts[i])
		next := fmt.Sprintf("l%02d", i)
		e.ok("fork", run, "--name", next)
		run = next
	}
	hostSh(t, orc, strings.Join(scripts[:17], "\n"))
	mid := mustSnapshot(t, orc)
	hostSh(t, orc, strings.Join(scripts[17:], "\n"))
	want := mustSnapshot(t, orc)
	requireSameTree(t, "l15 on the host", mid, mustSnapshot(t, e.path("l15")), compareOpts{})
	requireSameTree(t, run+" on the host", want, mustSnapshot(t, e.path(run)), compareOpts{})
	requireSameTree(t, run+" inside tine exec", want, e.walkIn(run, ws), compareOpts{})
	var deepest, compacted int
	for _, v := range e.treeState("deep").Versions {
		deepest = max(deepest, len(v.Layers))
		if v.Kind == "fork" && len(v.Layers) == 1 {
			compacted++
		}
	}
	if deepest > 32 || compacted == 0 {
		t.Errorf("the deepest version has %d layers (at most 32 allowed), %d fork versions were compacted into one layer (want some)", deepest, compacted)
	}
}

// TestCLI_Exec checks that tine exec passes standard streams, arguments and
// the exit status through, and keeps the working directory.
func TestCLI_Exec(t *testing.T) {
	t.Parallel()
	testkit.RequireRoot(t, rootWhy)
	e := newEnv(t)
	ws := e.workspaceDir("ex")
	if err := os.MkdirAll(filepath.Join(ws, "sub", "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct{ name, data string }{{"who", "source\n"}, {"plain.txt", "not executable\n"}} {
		if err := os.WriteFile(filepath.Join(ws, f.name), []byte(f.data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e.ok("init", "--backend", "overlay", ws)
	e.ok("fork", "source", "--name", "f")
	e.execSh("f", `printf 'fork\n' > who`)
	view := e.path("f")
	big := make([]byte, 1<<20)
	for i := range big {
		big[i] = byte(i * 7)
	}
	sub := filepath.Join(ws, "sub", "deep")
	tests := []struct {
		name   string
		c      call
		args   []string
		stdout string
		stderr string // exactly; "-" means any one line
		code   int
	}{
		{"streams and status", call{stdin: []byte("in\n")}, []string{"f", "--", "sh", "-c", "cat; echo err >&2; exit 7"}, "in\n", "err\n", 7},
		{"binary stdin to stdout", call{stdin: big}, []string{"f", "--", "cat"}, string(big), "", 0},
		{"arguments intact", call{}, []string{"f", "--", "printf", "%s|", "a b", "c'd", "--json", ""}, "a b|c'd|--json||", "", 0},
		{"no -- needed", call{}, []string{"f", "printf", "%s", "--json"}, "--json", "", 0},
		{"fork's files", call{}, []string{"f", "--", "cat", filepath.Join(ws, "who")}, "fork\n", "", 0},
		{"source's files", call{}, []string{"source", "--", "cat", filepath.Join(ws, "who")}, "source\n", "", 0},
		{"command not found", call{}, []string{"f", "--", "no-such-command-xyz"}, "", "-", 127},
		{"missing path", call{}, []string{"f", "--", "/no/such/program"}, "", "-", 127},
		{"not executable", call{}, []string{"f", "--", filepath.Join(ws, "plain.txt")}, "", "-", 126},
		{"killed by a signal", call{}, []string{"f", "--", "sh", "-c", "kill -TERM $$"}, "", "", 128 + 15},
		{"cwd outside the workspace", call{dir: "/"}, []string{"f", "--", "sh", "-c", "pwd; pwd -P"}, ws + "\n" + ws + "\n", "", 0},
		{"cwd in a subdirectory, fork", call{dir: sub}, []string{"f", "--", "sh", "-c", "pwd; pwd -P; cat ../../who"}, sub + "\n" + sub + "\nfork\n", "", 0},
		{"cwd in a subdirectory, source", call{dir: sub}, []string{"source", "--", "sh", "-c", "pwd; pwd -P; cat ../../who"}, sub + "\n" + sub + "\nsource\n", "", 0},
		{"cwd in the fork's view maps to the workspace path", call{dir: filepath.Join(view, "sub")}, []string{"f", "--", "sh", "-c", "pwd -P; pwd; echo \"$PWD\""},
			strings.Repeat(filepath.Join(ws, "sub")+"\n", 3), "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.run(tc.c, append([]string{"exec"}, tc.args...)...)
			if r.code != tc.code || r.stdout != tc.stdout {
				t.Errorf("exit %d, stdout %q; want exit %d, stdout %q (stderr %q)", r.code, clip(r.stdout), tc.code, clip(tc.stdout), r.stderr)
			}
			if tc.stderr != "-" && r.stderr != tc.stderr {
				t.Errorf("stderr %q, want %q", r.stderr, tc.stderr)
			}
			if tc.stderr == "-" && strings.Count(r.stderr, "\n") != 1 {
				t.Errorf("stderr %q, want one line", r.stderr)
			}
		})
	}
}

// TestCLI_Errors checks each refusal: one line on stderr starting "tine:",
// the documented exit status, and nothing created, changed or mounted.
func TestCLI_Errors(t *testing.T) {
	t.Parallel()
	testkit.RequireRoot(t, rootWhy)
	e := newEnv(t)
	ws := e.workspaceDir("errs")
	makeFiles(t, ws, 10)
	var ini jsonInit
	e.okJSON(&ini, "init", "--backend", "overlay", "--json", ws)
	e.ok("fork", "source", "-n", "2")
	e.execSh("source-1", `printf 'changed\n' > README.md`)
	e.ok("discard", "source-2")
	plain := filepath.Join(filepath.Dir(ws), "plain-file")
	other := filepath.Join(filepath.Dir(ws), "other")
	for _, err := range []error{os.WriteFile(plain, []byte("x"), 0o644), os.Mkdir(other, 0o755), os.Symlink(ws, ws+"-link")} {
		if err != nil {
			t.Fatal(err)
		}
	}
	srcTree := mustSnapshot(t, ws)
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"unknown run", []string{"exec", "nosuch", "--", "true"}, exitNotFound},
		{"unknown run id", []string{"diff", "rzzzzzzzz"}, exitNotFound},
		{"unknown run to fork", []string{"fork", "nosuch"}, exitNotFound},
		{"unknown run in workspace", []string{"log", "errs/nosuch"}, exitNotFound},
		{"unknown workspace", []string{"ls", "nosuch"}, exitNotFound},
		{"unknown workspace to release", []string{"release", other}, exitNotFound},
		{"unknown group", []string{"discard", "gzzzzzzzz", "--unmerged", "--while-running"}, exitNotFound},
		{"init a file", []string{"init", plain}, exitUsage},
		{"init a missing path", []string{"init", filepath.Join(other, "missing")}, exitUsage},
		{"init inside a workspace", []string{"init", filepath.Join(ws, "d00")}, exitExists},
		{"init around a workspace", []string{"init", filepath.Dir(ws)}, exitExists},
		{"init a managed path", []string{"init", ws}, exitExists},
		{"init a managed path through a symlink", []string{"init", ws + "-link"}, exitExists},
		{"init with a taken name", []string{"init", "--name", "errs", other}, exitExists},
		{"init with an unknown backend", []string{"init", "--backend", "zfs", other}, exitUsage},
		{"exec a discarded run", []string{"exec", "source-2", "--", "true"}, exitState},
		{"path of a discarded run", []string{"path", "source-2"}, exitState},
		{"diff of a discarded run", []string{"diff", "source-2"}, exitState},
		{"fork a discarded run", []string{"fork", "source-2"}, exitState},
		{"checkpoint a discarded run", []string{"checkpoint", "source-2"}, exitState},
		{"rollback a discarded run", []string{"rollback", "source-2", "--to", ini.Run.Base}, exitState},
		{"discard a discarded run", []string{"discard", "source-2", "--unmerged", "--while-running"}, exitState},
		{"discard the source", []string{"discard", "source", "--unmerged", "--while-running"}, exitState},
		{"discard unmerged", []string{"discard", "source-1"}, exitUnmerged},
		{"release with unmerged forks", []string{"release", ws}, exitUnmerged},
		{"copies 0", []string{"fork", "source", "--copies", "0"}, exitUsage},
		{"copies -1", []string{"fork", "source", "-n", "-1"}, exitUsage},
		{"copies 65", []string{"fork", "source", "-n", "65"}, exitUsage},
		{"copies not a number", []string{"fork", "source", "-n", "two"}, exitUsage},
		{"more approaches than copies", []string{"fork", "source", "-n", "2", "--approach", "a", "--approach", "b", "--approach", "c"}, exitUsage},
		{"two approaches, default copies", []string{"fork", "source", "--approach", "a", "--approach", "b"}, exitUsage},
		{"bad fork name", []string{"fork", "source", "--name", "no spaces"}, exitUsage},
		{"fork name taken", []string{"fork", "source", "--name", "source-1"}, exitExists},
		{"rollback to an unknown version", []string{"rollback", "source-1", "--to", "nope"}, exitNotFound},
		{"rollback to an unknown version id", []string{"rollback", "source-1", "--to", "vzzzzzzzz"}, exitNotFound},
		{"rollback without --to", []string{"rollback", "source-1"}, exitUsage},
		{"exec without a command", []string{"exec", "source-1", "--"}, exitUsage},
		{"unknown flag", []string{"ls", "--bogus"}, exitUsage},
		{"too many arguments", []string{"path", "source", "source-1"}, exitUsage},
		{"exclusive flags", []string{"diff", "source-1", "--patch", "--json"}, exitUsage},
		{"unknown command", []string{"frobnicate"}, exitUsage},
	}
	before := e.state()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.tine(tc.args...)
			requireOneLineError(t, r, tc.code)
			after := e.state()
			requireSameState(t, strings.Join(tc.args, " "), before, after)
			before = after
			if ents, err := os.ReadDir(other); err != nil || len(ents) != 0 {
				t.Errorf("%s should stay empty, holds %v (%v)", other, ents, err)
			}
		})
	}
	requireSameTree(t, "the source after all the errors", srcTree, mustSnapshot(t, ws), compareOpts{times: true, links: true})
}

// TestCLI_InitKeepsTree checks that after init the workspace path shows
// exactly what the directory held: every path, mode, owner, time and hard
// link, the directory itself included.
func TestCLI_InitKeepsTree(t *testing.T) {
	t.Parallel()
	testkit.RequireRoot(t, rootWhy)
	e := newEnv(t)
	ws := e.workspaceDir("keep")
	makeFiles(t, ws, 50)
	old := time.Date(2001, 2, 3, 4, 5, 6, 7, time.UTC)
	for _, err := range []error{
		os.Chtimes(filepath.Join(ws, "README.md"), old, old),
		os.Chmod(ws, 0o750),
		os.Chown(ws, 1234, 1234),
		unix.Mkfifo(filepath.Join(ws, "fifo"), 0o640),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	before := mustSnapshot(t, ws)
	e.ok("init", "--backend", "overlay", ws)
	after := mustSnapshot(t, ws)
	requireSameTree(t, "the workspace path after init", before, after, compareOpts{times: true, links: true})
	if w, a := before["."], after["."]; w.Mode != a.Mode || w.UID != a.UID || w.GID != a.GID {
		t.Errorf("the workspace directory itself: mode %o owner %d:%d after init, want mode %o owner %d:%d",
			a.Mode, a.UID, a.GID, w.Mode, w.UID, w.GID)
	}
}

// TestCLI_Release checks that release leaves plain files exactly as the
// source saw them (times, owners and hard links too), no mounts, no
// records, and that the directory can be taken under management again.
func TestCLI_Release(t *testing.T) {
	t.Parallel()
	testkit.RequireRoot(t, rootWhy)
	e := newEnv(t)
	ws := e.workspaceDir("rel")
	makeRepo(t, ws, 200)
	old := time.Date(2001, 2, 3, 4, 5, 6, 7, time.UTC)
	if err := os.Chtimes(filepath.Join(ws, "README.md"), old, old); err != nil {
		t.Fatal(err)
	}
	e.ok("init", "--backend", "overlay", ws)
	e.execSh("source", `printf 'source changed\n' > d00/s0/f0000.txt; rm d00/s1/f0010.txt; mkdir -p srcnew && printf 'n\n' > srcnew/n.txt
mv d01 d01-moved; chmod 600 run.sh; rm linkdir && ln -s d00 linkdir; mkfifo fifo; ln srcnew/n.txt srcnew/n2.txt; touch -d 2002-01-01 d00/s0/f0001.txt`)
	e.ok("fork", "source", "--name", "f")
	e.execSh("f", `printf 'fork only\n' > README.md`)
	before := mustSnapshot(t, ws)

	st := e.state()
	requireOneLineError(t, e.tine("release", ws), exitUnmerged)
	requireSameState(t, "a refused release", st, e.state())

	e.ok("release", "--unmerged", ws)
	requireSameTree(t, "the workspace after release", before, mustSnapshot(t, ws), compareOpts{times: true, links: true})
	if mps := mountPoints(e.tmp); len(mps) != 0 {
		t.Errorf("mounts left after release: %q", mps)
	}
	if rows := e.ls("--all"); len(rows) != 0 {
		t.Errorf("tine ls --all --json after release: %+v", rows)
	}
	if left, _ := os.ReadDir(filepath.Join(e.home, "workspaces")); len(left) != 0 {
		t.Errorf("state left after release: %v", left)
	}
	e.ok("init", "--backend", "overlay", ws)
	requireSameTree(t, "the workspace taken again", before, mustSnapshot(t, ws), compareOpts{})
	e.ok("release", ws)
	requireSameTree(t, "the workspace released again", before, mustSnapshot(t, ws), compareOpts{})

	t.Run("root directory changed by the source", func(t *testing.T) {
		e.ok("init", "--backend", "overlay", ws)
		e.execSh("source", `chmod 700 .`)
		want := mustSnapshot(t, ws)
		e.ok("release", ws)
		requireSameTree(t, "the workspace after release", want, mustSnapshot(t, ws), compareOpts{})
	})
}

// TestCLI_Recovery simulates a reboot (every mount of the workspace gone)
// and checks that the next command mounts everything again: the source's
// files at the workspace path, each fork's intact, inside runs too.
func TestCLI_Recovery(t *testing.T) {
	t.Parallel()
	testkit.RequireRoot(t, rootWhy)
	for _, tc := range []struct {
		name    string
		unmount func(ws string, views []string) []string
	}{
		{"everything", func(ws string, views []string) []string { return append([]string{ws}, views...) }},
		{"only the workspace path", func(ws string, views []string) []string { return []string{ws} }},
		{"only the forks", func(ws string, views []string) []string { return views[1:] }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			ws := e.workspaceDir("rec")
			makeRepo(t, ws, 200)
			e.ok("init", "--backend", "overlay", ws)
			e.ok("fork", "source", "-n", "2")
			e.execSh("source", `printf 'source after fork\n' > README.md`)
			e.execSh("source-1", `printf 'one\n' > d00/s0/f0000.txt; rm -r d01`)
			e.ok("fork", "source-1", "--name", "grandchild")
			e.execSh("grandchild", `printf 'grand\n' > g.txt`)
			runs := []string{"source", "source-1", "source-2", "grandchild"}
			want := map[string]tree{}
			var views []string
			for _, r := range runs {
				want[r] = mustSnapshot(t, e.path(r))
				if r != "source" {
					views = append(views, e.path(r))
				}
			}
			views = append([]string{srcView(t, e, ws)}, views...)
			mountsBefore := mountPoints(e.tmp)
			for _, mp := range tc.unmount(ws, views) {
				unmount(t, mp)
			}
			if slices.Contains(tc.unmount(ws, views), ws) {
				checkMarker(t, ws)
			}
			r := e.tine("ls", "--json")
			if r.code != 0 || r.stderr != "" {
				t.Errorf("the first command after the unmount: %v", r)
			}
			if got := mountPoints(e.tmp); fmt.Sprint(sortedCopy(got)) != fmt.Sprint(sortedCopy(mountsBefore)) {
				t.Errorf("mounts after recovery %q, want %q", got, mountsBefore)
			}
			for _, r := range runs {
				requireSameTree(t, r+" after recovery", want[r], mustSnapshot(t, e.path(r)), compareOpts{})
				requireSameTree(t, r+" after recovery, inside", want[r], e.walkIn(r, ws), compareOpts{})
			}
		})
	}
}

func sortedCopy(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// srcView returns the source's own overlay mount under TINE_HOME.
func srcView(t *testing.T, e *env, ws string) string {
	t.Helper()
	st := e.treeState(ws)
	src := runByName(st.Runs, "source")
	return filepath.Join(e.home, "workspaces", st.Workspace.ID, "runs", src.ID, "view")
}

// checkMarker checks what an unmounted workspace directory holds: only the
// marker that says how to bring the files back.
func checkMarker(t *testing.T, ws string) {
	t.Helper()
	ents, err := os.ReadDir(ws)
	if err != nil || len(ents) != 1 || ents[0].Name() != ".tine-workspace" {
		t.Fatalf("the unmounted workspace directory holds %v (%v), want only .tine-workspace", ents, err)
	}
	if m := readFile(t, ws, ".tine-workspace"); !strings.Contains(m, "tine ls") || !strings.Contains(m, "tine release "+ws) {
		t.Errorf("marker text %q does not say how to bring the files back", m)
	}
}

// TestCLI_KillDuringFork kills tine fork (SIGKILL) at different moments and
// checks what the next command finds: the source untouched, every fork
// either complete (recorded, mounted, holding the source's files) or gone
// without a trace (no run directory, no mount, no unrecorded layer).
func TestCLI_KillDuringFork(t *testing.T) {
	t.Parallel()
	testkit.RequireRoot(t, rootWhy)
	e := newEnv(t)
	ws := e.workspaceDir("kill")
	makeFiles(t, ws, 100)
	e.ok("init", "--backend", "overlay", ws)
	// A large delta in the source makes sealing it take a while.
	e.execSh("source", `for i in $(seq 400); do printf '%s\n' "$i" > d00/s0/n$i.txt; done; rm -r d00/s1`)
	want := mustSnapshot(t, ws)
	e.ok("fork", "source", "-n", "2", "--name", "before") // forks that must survive the kills
	var killed, debris int
	delays := []time.Duration{0, 20, 50, 80, 110, 140, 170, 200, 250, 300, 400} // milliseconds
	checked := map[string]bool{}
	for i, delay := range delays {
		cmd := exec.Command(tineBin, "fork", "source", "-n", "3", "--name", fmt.Sprintf("k%d", i))
		cmd.Env = e.vars
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(delay * time.Millisecond)
		cmd.Process.Kill()
		if err := cmd.Wait(); err != nil {
			if !strings.Contains(err.Error(), "killed") {
				t.Errorf("tine fork: %v\n%s", err, stderr.String())
			}
			killed++
		}
		if checkAfterKill(t, e, ws, want, checked) {
			debris++
		}
	}
	t.Logf("%d of %d forks were killed before they finished, %d of them half way (the next command removed what they left); %d runs live",
		killed, len(delays), debris, len(e.ls()))
}

// checkAfterKill checks the invariants a killed command must leave once
// the next command has swept, and reports whether that command had
// anything to remove. Forks in checked were compared with the source
// already.
func checkAfterKill(t *testing.T, e *env, ws string, want tree, checked map[string]bool) bool {
	t.Helper()
	before := walkHost(t, e.home, "-names")
	if r := e.tine("ls", "--json"); r.code != 0 {
		t.Fatalf("the first command after a kill: %v", r)
	}
	st := e.treeState(filepath.Base(ws))
	requireSameTree(t, "the source after a killed fork", want, mustSnapshot(t, ws), compareOpts{})
	wsDir := filepath.Join(e.home, "workspaces", st.Workspace.ID)
	wantMounts := []string{ws}
	var live []string
	for _, r := range st.Runs {
		if r.State != "active" {
			continue
		}
		live = append(live, r.ID)
		view := filepath.Join(wsDir, "runs", r.ID, "view")
		wantMounts = append(wantMounts, view)
		if r.Role == "fork" && !checked[r.ID] {
			requireSameTree(t, "fork "+r.Name+" after a killed fork", want, mustSnapshot(t, view), compareOpts{})
			checked[r.ID] = true
		}
	}
	if got := dirNames(t, filepath.Join(wsDir, "runs")); !slices.Equal(got, sortedCopy(live)) {
		t.Errorf("run directories %q, want the live runs %q", got, sortedCopy(live))
	}
	var layers []string
	for _, v := range st.Versions {
		layers = append(layers, v.Layers...)
	}
	layers = slices.Compact(sortedCopy(layers))
	if got := dirNames(t, filepath.Join(wsDir, "layers")); !slices.Equal(got, layers) {
		t.Errorf("layer directories %q, want those of the recorded versions %q", got, layers)
	}
	if got := mountPoints(e.tmp); !slices.Equal(sortedCopy(got), sortedCopy(wantMounts)) {
		t.Errorf("mounts %q, want %q", got, wantMounts)
	}
	after := walkHost(t, e.home, "-names")
	for p := range before {
		if _, ok := after[p]; !ok && !strings.HasPrefix(p, "tine.db") {
			return true
		}
	}
	return false
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}
