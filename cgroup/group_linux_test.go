package cgroup

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tinehq/tine/internal/testkit"
	"golang.org/x/sys/unix"
)

// testTimeout bounds every wait in these tests.
const testTimeout = 10 * time.Second

// rootWhy says why this package's tests need root.
const rootWhy = "cgroups are made and written under /sys/fs/cgroup"

func testCtx(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	tb.Cleanup(cancel)
	return ctx
}

// testGroup opens a group with a fresh name and removes it when the test
// ends.
func testGroup(tb testing.TB) *Group {
	tb.Helper()
	testkit.RequireRoot(tb, rootWhy)
	g, err := Open(testName())
	if errors.Is(err, ErrUnsupported) {
		tb.Skip(err)
	}
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		if err := g.Remove(ctx); err != nil {
			tb.Errorf("Remove: %v", err)
		}
	})
	return g
}

func testName() string {
	b := make([]byte, 4)
	rand.Read(b)
	return "test-" + hex.EncodeToString(b)
}

// startIn runs script with sh inside g. The shell waits on its stdin until
// it has been added, so everything it forks is born in the group.
func startIn(tb testing.TB, g *Group, script string) *exec.Cmd {
	tb.Helper()
	cmd := exec.Command("sh", "-c", "read _; "+script)
	in, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		g.Kill(context.Background())
		cmd.Process.Kill()
		cmd.Wait()
	})
	if err := g.Add(cmd.Process.Pid); err != nil {
		tb.Fatal(err)
	}
	if _, err := in.Write([]byte("\n")); err != nil {
		tb.Fatal(err)
	}
	in.Close()
	return cmd
}

// eventually fails the test unless cond holds within testTimeout.
func eventually(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	if err := poll(testCtx(tb), func() (bool, error) { return cond(), nil }); err != nil {
		tb.Fatalf("%s: %v", what, err)
	}
}

func procs(tb testing.TB, g *Group) []int {
	tb.Helper()
	pids, err := g.Procs()
	if err != nil {
		tb.Fatal(err)
	}
	return pids
}

// mechanisms are the freeze and kill paths Freeze and Kill can take.
var mechanisms = []struct {
	name                 string
	noV2Freeze, noV2Kill bool
}{
	{"v2", false, false},             // cgroup.freeze and cgroup.kill
	{"v2freeze+signal", false, true}, // kernels 5.2 to 5.13
	{"v1freezer+signal", true, true}, // pure v1
}

// forEachMechanism runs f in a subtest per mechanism this machine has,
// each with its own group.
func forEachMechanism(t *testing.T, f func(t *testing.T, g *Group)) {
	for _, m := range mechanisms {
		t.Run(m.name, func(t *testing.T) {
			g := testGroup(t)
			g.noV2Freeze, g.noV2Kill = m.noV2Freeze, m.noV2Kill
			wantFreeze := map[bool]string{false: freezeV2, true: freezeV1}[m.noV2Freeze]
			if g.freezer() != wantFreeze || !m.noV2Kill && g.killFile() == "" {
				t.Skipf("no %s on this machine", m.name)
			}
			f(t, g)
		})
	}
}

func TestOpen_Idempotent(t *testing.T) {
	g := testGroup(t)
	again, err := Open(g.Name())
	if err != nil {
		t.Fatalf("second Open: %v", err)
	}
	if !slices.Equal(again.dirs(), g.dirs()) {
		t.Errorf("dirs %v, then %v", g.dirs(), again.dirs())
	}
	for _, d := range g.dirs() {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			t.Errorf("group directory %s: %v", d, err)
		}
	}
	names, err := List()
	if err != nil || !slices.Contains(names, g.Name()) {
		t.Errorf("List() = %v, %v; want it to hold %q", names, err, g.Name())
	}
	if _, err := Load(g.Name()); err != nil {
		t.Errorf("Load: %v", err)
	}
}

func TestOpen_UsesEveryHierarchy(t *testing.T) {
	g := testGroup(t)
	l, err := readLayout()
	if err != nil {
		t.Fatal(err)
	}
	if l.v2 != "" && g.v2 != filepath.Join(l.v2, "tine", g.Name()) {
		t.Errorf("v2 group at %s, root %s", g.v2, l.v2)
	}
	for c, root := range l.v1 {
		if want := filepath.Join(root, "tine", g.Name()); g.v1[c] != want {
			t.Errorf("%s group at %s, want %s", c, g.v1[c], want)
		}
	}
}

func TestOpen_InvalidName(t *testing.T) {
	for _, name := range []string{"", ".", "..", "a/b", "../../etc", "x y"} {
		if _, err := Open(name); !errors.Is(err, ErrInvalidName) {
			t.Errorf("Open(%q) = %v, want ErrInvalidName", name, err)
		}
		if _, err := Load(name); !errors.Is(err, ErrInvalidName) {
			t.Errorf("Load(%q) = %v, want ErrInvalidName", name, err)
		}
	}
}

func TestLoad_Missing(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	if _, err := Load(testName()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load of a missing group = %v, want fs.ErrNotExist", err)
	}
}

func TestGroup_AddProcs(t *testing.T) {
	g := testGroup(t)
	if pids := procs(t, g); len(pids) != 0 {
		t.Fatalf("new group holds %v", pids)
	}
	cmd := exec.Command("sleep", "100")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	if err := g.Add(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if pids := procs(t, g); !slices.Equal(pids, []int{cmd.Process.Pid}) {
		t.Errorf("Procs() = %v, want [%d]", pids, cmd.Process.Pid)
	}
	for _, d := range g.dirs() { // every hierarchy, not just the one Procs reads
		if pids, err := readPids(filepath.Join(d, "cgroup.procs")); err != nil || !slices.Contains(pids, cmd.Process.Pid) {
			t.Errorf("%s holds %v, %v", d, pids, err)
		}
	}
}

func TestGroup_AddMissingProcess(t *testing.T) {
	g := testGroup(t)
	err := g.Add(1 << 30)
	if !errors.Is(err, unix.ESRCH) || !strings.Contains(err.Error(), g.Name()) {
		t.Errorf("Add(missing pid) = %v; want ESRCH naming the group", err)
	}
}

func fileSize(tb testing.TB, path string) int64 {
	tb.Helper()
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0
	}
	if err != nil {
		tb.Fatal(err)
	}
	return fi.Size()
}

func TestGroup_FreezeThaw(t *testing.T) {
	forEachMechanism(t, func(t *testing.T, g *Group) {
		ctx := testCtx(t)
		out := filepath.Join(t.TempDir(), "out")
		startIn(t, g, fmt.Sprintf("while :; do echo x >> %s; done", out))
		eventually(t, "loop writes", func() bool { return fileSize(t, out) > 0 })
		if err := g.Freeze(ctx); err != nil {
			t.Fatal(err)
		}
		if ok, err := g.Frozen(); err != nil || !ok {
			t.Errorf("Frozen() after Freeze = %v, %v", ok, err)
		}
		sizes := []int64{fileSize(t, out)}
		for range 2 {
			time.Sleep(100 * time.Millisecond)
			sizes = append(sizes, fileSize(t, out))
		}
		if sizes[0] != sizes[1] || sizes[1] != sizes[2] {
			t.Errorf("file grew while frozen: %v", sizes)
		}
		if err := g.Freeze(ctx); err != nil {
			t.Errorf("Freeze of a frozen group: %v", err)
		}
		if err := g.Thaw(); err != nil {
			t.Fatal(err)
		}
		if ok, err := g.Frozen(); err != nil || ok {
			t.Errorf("Frozen() after Thaw = %v, %v", ok, err)
		}
		eventually(t, "loop writes after Thaw", func() bool { return fileSize(t, out) > sizes[2] })
	})
}

func TestGroup_FreezeEmpty(t *testing.T) {
	forEachMechanism(t, func(t *testing.T, g *Group) {
		if err := g.Freeze(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		if ok, err := g.Frozen(); !ok || err != nil {
			t.Errorf("empty group Frozen() = %v, %v", ok, err)
		}
	})
}

func TestGroup_FreezeCanceled(t *testing.T) {
	g := testGroup(t)
	startIn(t, g, "while :; do :; done")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := g.Freeze(ctx); !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), g.Name()) {
		t.Errorf("Freeze(canceled) = %v; want context.Canceled naming the group", err)
	}
}

// gone reports whether pid has exited: no such process, or a zombie.
func gone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return strings.HasPrefix(rest, "Z") || strings.HasPrefix(rest, "X")
}

func TestGroup_Kill(t *testing.T) {
	for _, frozen := range []bool{false, true} {
		t.Run(fmt.Sprintf("frozen=%v", frozen), func(t *testing.T) {
			forEachMechanism(t, func(t *testing.T, g *Group) { testKillTree(t, g, frozen) })
		})
	}
}

// testKillTree kills a shell and three background sleeps it forked.
func testKillTree(t *testing.T, g *Group, frozen bool) {
	ctx := testCtx(t)
	cmd := startIn(t, g, "sleep 100 & sleep 100 & sleep 100 & wait")
	eventually(t, "4 processes", func() bool { return len(procs(t, g)) == 4 })
	pids := procs(t, g)
	if frozen {
		if err := g.Freeze(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if left := procs(t, g); len(left) != 0 {
		t.Errorf("Procs() after Kill = %v", left)
	}
	if err := cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("shell ended with %v, want killed", err)
	}
	for _, pid := range pids {
		if !gone(pid) {
			t.Errorf("pid %d survived Kill", pid)
		}
	}
	if ok, _ := g.Frozen(); ok {
		t.Error("Kill left the group frozen")
	}
}

func TestGroup_KillEmpty(t *testing.T) {
	forEachMechanism(t, func(t *testing.T, g *Group) {
		if err := g.Kill(testCtx(t)); err != nil {
			t.Error(err)
		}
	})
}

// limitFile returns the file a limit lives in, v2 or v1.
func limitFile(tb testing.TB, g *Group, v2name, controller, v1name string) string {
	tb.Helper()
	if p := g.v2file(v2name); p != "" {
		return p
	}
	if p := g.v1file(controller, v1name); p != "" {
		return p
	}
	tb.Skipf("no %s controller", controller)
	return ""
}

func readFile(tb testing.TB, path string) string {
	tb.Helper()
	s, err := readString(path)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func TestGroup_SetLimits(t *testing.T) {
	g := testGroup(t)
	mem := limitFile(t, g, "memory.max", "memory", "memory.limit_in_bytes")
	pids := limitFile(t, g, "pids.max", "pids", "pids.max")
	cpu := limitFile(t, g, "cpu.max", "cpu", "cpu.cfs_quota_us")
	if err := g.SetLimits(Limits{MemoryBytes: 64 << 20, CPU: 1.5, Pids: 100}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{mem: "67108864", pids: "100", cpu: "150000"}
	if strings.HasSuffix(cpu, "cpu.max") {
		want[cpu] = "150000 100000"
	}
	for f, w := range want {
		if got := readFile(t, f); got != w {
			t.Errorf("%s = %q, want %q", f, got, w)
		}
	}
	if err := g.SetLimits(Limits{}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{mem, pids, cpu} {
		if got := readFile(t, f); !unlimited(got) {
			t.Errorf("%s = %q after lifting the limit", f, got)
		}
	}
}

// unlimited reports whether a limit file's content means no limit.
func unlimited(s string) bool {
	return s == "max" || s == "-1" || strings.HasPrefix(s, "max ") || len(s) >= 19 // v1 memory: PAGE_COUNTER_MAX bytes
}

func TestGroup_SetLimitsInvalid(t *testing.T) {
	g := testGroup(t)
	for _, l := range []Limits{{MemoryBytes: -1}, {Pids: -5}, {CPU: -1}} {
		if err := g.SetLimits(l); err == nil {
			t.Errorf("SetLimits(%+v) succeeded", l)
		}
	}
}

func TestGroup_PidsLimit(t *testing.T) {
	g := testGroup(t)
	events := limitFile(t, g, "pids.events", "pids", "pids.events")
	if err := g.SetLimits(Limits{Pids: 5}); err != nil {
		t.Fatal(err)
	}
	startIn(t, g, "for i in $(seq 20); do sleep 5 & done; wait")
	most := 0
	eventually(t, "fork failures in "+events, func() bool {
		most = max(most, len(procs(t, g)))
		n, err := readKey(events, "max")
		return err == nil && n > 0
	})
	for range 20 { // and the limit holds while the sleeps live
		most = max(most, len(procs(t, g)))
		time.Sleep(5 * time.Millisecond)
	}
	if most > 5 || most == 0 {
		t.Errorf("at most %d processes ran; want 1 to 5", most)
	}
}

func TestGroup_Stats(t *testing.T) {
	g := testGroup(t)
	before, err := g.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if before.Pids != 0 || before.Frozen {
		t.Errorf("new group stats %+v", before)
	}
	// The shell fills a 1MB variable: v1 memory charges only pages
	// touched after joining the group.
	startIn(t, g, "x=$(head -c 1000000 /dev/zero | tr '\\0' a); while :; do :; done")
	var after Stats
	eventually(t, "CPU usage grows by 100ms", func() bool {
		after, err = g.Stats()
		return err == nil && after.CPUUsage-before.CPUUsage >= 100*time.Millisecond
	})
	t.Logf("%+v", after)
	if after.Pids != 1 {
		t.Errorf("Pids = %d, want 1", after.Pids)
	}
	if info, _ := Probe(); after.Version != info.Version {
		t.Errorf("Version = %q, Probe says %q", after.Version, info.Version)
	}
	if g.v2file("memory.current") != "" || g.v1file("memory", "memory.usage_in_bytes") != "" {
		if after.MemoryBytes <= 0 || after.MemoryPeakBytes != 0 && after.MemoryPeakBytes < after.MemoryBytes {
			t.Errorf("memory %d, peak %d", after.MemoryBytes, after.MemoryPeakBytes)
		}
	}
	if err := g.Freeze(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if s, err := g.Stats(); err != nil || !s.Frozen {
		t.Errorf("Stats of a frozen group: %+v, %v", s, err)
	}
}

func TestGroup_Remove(t *testing.T) {
	g := testGroup(t)
	cmd := startIn(t, g, "sleep 100 & sleep 100")
	eventually(t, "3 processes", func() bool { return len(procs(t, g)) == 3 })
	if err := g.Freeze(testCtx(t)); err != nil { // a frozen run is removed too
		t.Fatal(err)
	}
	if err := g.Remove(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	for _, d := range g.dirs() {
		if _, err := os.Stat(d); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s still there: %v", d, err)
		}
	}
	if _, err := Load(g.Name()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load after Remove = %v", err)
	}
	if names, _ := List(); slices.Contains(names, g.Name()) {
		t.Errorf("List() after Remove = %v", names)
	}
	if err := g.Remove(testCtx(t)); err != nil {
		t.Errorf("second Remove: %v", err)
	}
}

func TestProbe(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	info, err := Probe()
	if errors.Is(err, ErrUnsupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", info)
	l, _ := readLayout()
	if info.V2Root != l.v2 || len(info.V1Roots) != len(l.v1) {
		t.Errorf("Probe roots %q %v, mountinfo %q %v", info.V2Root, info.V1Roots, l.v2, l.v1)
	}
	if want, _ := l.version(); info.Version != want {
		t.Errorf("Version = %q, want %q", info.Version, want)
	}
	if !slices.Contains([]string{freezeV2, freezeV1, freezeNone}, info.Freeze) ||
		!slices.Contains([]string{"cgroup.kill", "signal"}, info.Kill) {
		t.Errorf("mechanisms %q, %q", info.Freeze, info.Kill)
	}
	g := testGroup(t)
	if g.freezer() != info.Freeze {
		t.Errorf("Probe says freeze by %q, the group uses %q", info.Freeze, g.freezer())
	}
	for _, c := range info.Limits {
		if g.v2file(c+".max") == "" && g.v1[c] == "" {
			t.Errorf("Probe lists %s, the group has no %s limit", c, c)
		}
	}
}

func BenchmarkOpenAddRemove(b *testing.B) {
	testkit.RequireRoot(b, rootWhy)
	ctx := context.Background()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		cmd := exec.Command("sleep", "100")
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		g, err := Open(fmt.Sprintf("bench-%d-%d", os.Getpid(), i))
		if err != nil {
			b.Fatal(err)
		}
		if err := g.Add(cmd.Process.Pid); err != nil {
			b.Fatal(err)
		}
		if err := g.Remove(ctx); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		cmd.Wait()
		b.StartTimer()
	}
}

func BenchmarkFreezeThaw(b *testing.B) {
	for _, m := range mechanisms[1:] { // freezing does not depend on the kill path
		b.Run(m.name[:strings.Index(m.name, "+")], func(b *testing.B) {
			g := testGroup(b)
			g.noV2Freeze = m.noV2Freeze
			startIn(b, g, "while :; do :; done")
			ctx := context.Background()
			for b.Loop() {
				if err := g.Freeze(ctx); err != nil {
					b.Fatal(err)
				}
				if err := g.Thaw(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
