package engine_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/runtime"
)

// BenchmarkForkLive measures what a fork of a running run costs on top of
// its files: each fork gets a supervisor (mount, pid, uts and ipc
// namespaces), a cgroup and, with net, a network namespace wired to the
// tine bridge with its own address; the source runs one service. "files"
// is the same fork with --live=none, measured in the same run for the
// ratio.
//
//	sudo go test ./engine -run '^$' -bench ForkLive -benchtime 20x
func BenchmarkForkLive(b *testing.B) {
	for _, n := range []int{1, 16} {
		for _, mode := range []string{"files", "rerun", "rerun+net", "ptrace+net"} {
			b.Run(fmt.Sprintf("%s/%dway", mode, n), func(b *testing.B) { benchForkLive(b, mode, n) })
		}
	}
}

func benchForkLive(b *testing.B, mode string, n int) {
	bn := newBench(b, "overlay", forkFiles, forkFileBytes)
	// One single-threaded service: a python process, so ptrace can carry it.
	toml := "[[service]]\nname = \"svc\"\ncommand = \"exec /usr/bin/python3 -c 'import time\\nwhile True: time.sleep(1)'\"\n"
	if mode != "files" && mode != "rerun" {
		toml += "[network]\nisolate = true\n"
	}
	if err := os.WriteFile(bn.path+"/tine.toml", []byte(toml), 0o644); err != nil {
		b.Fatal(err)
	}
	if _, err := runtime.Of(bn.e).Start(bn.ctx, bn.ws+"/source", runtime.StartOptions{Services: true}); err != nil {
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
		bn.writeDelta(benchDelta, i)
		b.StartTimer()
		res, err := bn.e.Fork(bn.ctx, bn.ws+"/source", engine.ForkOptions{Copies: n, Live: live})
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
		bn.discard(res)
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/fork")
	if pauses > 0 {
		b.ReportMetric(pause/float64(pauses), "pause-ms")
	}
}
