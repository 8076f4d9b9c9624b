package livefork

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/tinehq/tine/confine"
	"golang.org/x/sys/unix"
)

// A copy that cannot be given its confinement (here a seccomp program the
// kernel rejects) is not left running unconfined: the fork fails, the copy
// is killed and its origin goes on.
func TestFork_ConfineFailureKillsTheCopy(t *testing.T) {
	c := newCounter(t, "0.05", "sleep")
	writeFile(t, filepath.Join(c.fork, "out.txt"), "")
	bad := &confine.Plan{Filter: []byte{0xff, 0xff, 0, 0, 0, 0, 0, 0}} // no such BPF instruction
	res, err := forkOne(t, c.pid, c.targetFor(func(tg *Target) { tg.Confine = bad }))
	if err == nil || !errors.Is(err, unix.EINVAL) || res.Child == 0 {
		t.Fatalf("Fork = %+v, %v; want EINVAL from seccomp in the child", res, err)
	}
	t.Logf("%v", err)
	c.assertTicking(t)
	gone(t, res.Child)
}

// BenchmarkConfine measures what giving the copy a fork's confinement
// (Target.Confine: no_new_privs, a Landlock ruleset of six paths, the
// fork's seccomp filter) adds to a live fork: each iteration forks the
// same python process twice, with and without it, in alternating order,
// and reports the whole Fork (fork-ms, until the copy runs) and the
// parent's pause (pause-ms) of each.
func BenchmarkConfine(b *testing.B) {
	requireLiveFork(b)
	c := &counterSetup{ws: b.TempDir(), fork: b.TempDir(), dir: b.TempDir()}
	c.parentLog = filepath.Join(c.dir, "parent.log")
	c.pid = start(b, c.ws, c.parentLog, python, writeScript(b, counterPy), filepath.Join(c.ws, "out.txt"), "1", "sleep").Process.Pid
	c.target = targetRun(b, c.ws, c.fork, false)
	waitLine(b, c.parentLog, " 1\n")
	writeFile(b, filepath.Join(c.fork, "out.txt"), "")
	plan, err := confine.PlanFor(confine.Spec{Writable: []string{c.ws, "/tmp", "/var/tmp", "/dev", c.dir, "/root"}, Seccomp: true, DenyMounts: true})
	if err != nil {
		b.Fatal(err)
	}
	plain, confined := c.targetFor(nil), c.targetFor(func(tg *Target) { tg.Confine = &plan })
	var took, paused [2]time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k := range 2 {
			which := (i + k) % 2 // 0 plain, 1 confined
			tg := []Target{plain, confined}[which]
			start := time.Now()
			s, err := Seize([]int{c.pid})
			if err != nil {
				b.Fatal(err)
			}
			res, err := s.Fork(c.pid, tg)
			s.Close()
			took[which] += time.Since(start)
			paused[which] += res.Pause
			reap(res.Child)
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	b.ReportMetric(ms(took[0]), "fork-ms")
	b.ReportMetric(ms(took[1]), "confined-fork-ms")
	b.ReportMetric(ms(paused[0]), "pause-ms")
	b.ReportMetric(ms(paused[1]), "confined-pause-ms")
	b.ReportMetric(float64(took[1])/float64(took[0]), "confined/plain")
}
