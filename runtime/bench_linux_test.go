package runtime_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/engine/enginetest"
	"github.com/tinehq/tine/internal/testkit"
	"github.com/tinehq/tine/runtime"
)

// The fork benchmarks' workspace, as engine's fork benchmarks have it: 200
// files of 8 KiB, and a 1 MiB delta the source rewrites before each fork.
const (
	benchFiles     = 200
	benchFileBytes = 8 << 10
	benchDelta     = 1 << 20
)

// BenchmarkForkLive measures what a fork of a running run costs on top of
// its files: each fork gets a supervisor (mount, pid, uts and ipc
// namespaces), a cgroup and, with net, a network namespace wired to the
// tine bridge with its own address; the source runs one service. "files"
// is the same fork with --live=none, measured in the same run for the
// ratio. "rerun" gives the forks their own networks (the default) with
// the source on the host's; "rerun+hostnet" forks on the host's network
// (fork_network = "host"), what the default was before; "+net" isolates
// the source too.
//
//	sudo go test ./runtime -run '^$' -bench ForkLive -benchtime 20x
func BenchmarkForkLive(b *testing.B) {
	for _, n := range []int{1, 16} {
		for _, mode := range []string{"files", "rerun", "rerun+hostnet", "rerun+net", "ptrace+net"} {
			b.Run(fmt.Sprintf("%s/%dway", mode, n), func(b *testing.B) { benchForkLive(b, mode, n) })
		}
	}
}

func benchForkLive(b *testing.B, mode string, n int) {
	testkit.RequireRoot(b, rootWhy)
	ctx := context.Background()
	// One single-threaded service: a python process, so ptrace can carry it.
	toml := "[[service]]\nname = \"svc\"\ncommand = \"exec /usr/bin/python3 -c 'import time\\nwhile True: time.sleep(1)'\"\n"
	switch mode { // rerun: the forks' own networks (the default), the source the host's
	case "files", "rerun+hostnet":
		toml += "[network]\nfork_network = \"host\"\n"
	case "rerun+net", "ptrace+net":
		toml += "[network]\nisolate = true\n"
	}
	files := map[string]string{"tine.toml": toml}
	for i := range benchFiles {
		d := i / 50
		files[fmt.Sprintf("src/d%02d/e%02d/f%03d.txt", d/10, d%10, i%50)] = strings.Repeat(string(rune('a'+i%26)), benchFileBytes)
	}
	w := enginetest.New(b, enginetest.Options{Backend: "overlay", Name: "bench", Files: files})
	if _, err := runtime.Of(w.Engine).Start(ctx, w.Source.Run.ID, runtime.StartOptions{Services: true}); err != nil {
		b.Fatal(err)
	}
	live := map[string]string{"files": engine.LiveNone, "ptrace+net": engine.LivePtrace}[mode]
	if live == "" {
		live = engine.LiveRerun
	}
	time.Sleep(200 * time.Millisecond) // python is up
	var pause float64
	var pauses int
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		for j := range 16 { // the source's delta, new each round
			testkit.WriteFile(b, filepath.Join(w.Path, "delta", fmt.Sprintf("new%02d.bin", j)), benchDelta/16, byte(i+j))
		}
		b.StartTimer()
		res, err := w.Engine.Fork(ctx, w.Source.Run.ID, engine.ForkOptions{Copies: n, Live: live})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		for _, r := range res.Live {
			if !r.Started || r.Error != "" || (live == engine.LivePtrace && len(r.Forked) != 1) {
				b.Fatalf("fork %s: %+v", r.Run, r)
			}
			for _, p := range r.Forked {
				pause += p.PauseMS
				pauses++
			}
		}
		if _, err := w.Engine.Discard(ctx, res.Group.ID, true); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/fork")
	if pauses > 0 {
		b.ReportMetric(pause/float64(pauses), "pause-ms")
	}
}
