package netns

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// BenchmarkAttachDetach measures the network setup a fork pays: Attach then
// Detach of one namespace, reused across iterations. It also reports the
// two halves apart, as attach-ns/op and detach-ns/op.
func BenchmarkAttachDetach(b *testing.B) {
	cfg := testConfig(b)
	pid := newNS(b)
	addr, err := Allocate(cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	name := runName(b)
	var attach, detach time.Duration
	for b.Loop() {
		t0 := time.Now()
		if err := Attach(cfg, pid, name, addr); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := Detach(name); err != nil {
			b.Fatal(err)
		}
		attach, detach = attach+t1.Sub(t0), detach+time.Since(t1)
	}
	b.ReportMetric(float64(attach.Nanoseconds())/float64(b.N), "attach-ns/op")
	b.ReportMetric(float64(detach.Nanoseconds())/float64(b.N), "detach-ns/op")
}

// BenchmarkNewNamespaceAttach adds the namespace itself: clone a process
// with CLONE_NEWNET, Attach it, then Detach and reap it.
func BenchmarkNewNamespaceAttach(b *testing.B) {
	cfg := testConfig(b)
	addr, err := Allocate(cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	name := runName(b)
	for b.Loop() {
		cmd := exec.Command("sleep", "1000")
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		err := Attach(cfg, cmd.Process.Pid, name, addr)
		Detach(name)
		cmd.Process.Kill()
		cmd.Wait()
		if err != nil {
			b.Fatal(err)
		}
	}
}
