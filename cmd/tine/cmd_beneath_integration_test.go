//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestUser_ShellInTheDirectoryAtInit: tineuser's shell sits in ~/app when
// tine init mounts the workspace over it, and (not told, or not heeding,
// to cd again) writes node_modules there: beneath the mount, where the
// workspace does not see it and tineuser cannot reach it while the mount
// stands. tine release, through the system daemon, moves it beside the
// workspace, tineuser's, and says where. It refused before ("move it away
// and retry"), and only root, in a mount namespace of its own, could.
func TestUser_ShellInTheDirectoryAtInit(t *testing.T) {
	_, ann, _, dir := userWorkspace(t)
	signals := publicDir(t)
	os.Chown(signals, ann.uid, ann.gid)
	goFile, doneFile := filepath.Join(signals, "go"), filepath.Join(signals, "done")
	shell := exec.Command("sh", "-c", `while [ ! -e "$1" ]; do sleep 0.05; done; mkdir -p node_modules/left-pad && echo 'module.exports = 1' > node_modules/left-pad/index.js && touch "$2"; exec sleep 600`, "sh", goFile, doneFile)
	shell.Dir = dir
	shell.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(ann.uid), Gid: uint32(ann.gid)}}
	if err := shell.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shell.Process.Kill(); shell.Wait() })

	r := ann.tine(dir, nil, "init", ".")
	if r.code != 0 {
		t.Fatalf("init: %v", r)
	}
	os.WriteFile(goFile, nil, 0o644)
	for end := time.Now().Add(10 * time.Second); !fileExists(doneFile); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the shell did not write node_modules")
		}
	}
	if fileExists(filepath.Join(dir, "node_modules")) {
		t.Fatal("node_modules shows in the workspace: the shell did not write beneath its mount, and the test tests nothing")
	}

	// From inside the workspace, this command's own directory holds the
	// mount: said plainly, exit 8, nothing moved.
	r = ann.tine(filepath.Join(dir, "src"), nil, "release", dir)
	if r.code != 8 || !strings.Contains(r.stderr, "your current directory "+filepath.Join(dir, "src")+" is in the workspace, and keeps it mounted: cd out of it (cd "+filepath.Dir(dir)+")") {
		t.Fatalf("release from inside the workspace: %v; want exit 8 saying to cd out", r)
	}
	requireOneLineError(t, r, 8)
	if aside, _ := filepath.Glob(dir + ".beneath-mount-*"); len(aside) != 0 {
		t.Fatalf("a refused release moved %v aside", aside)
	}
	// Another process in the workspace holds the mount: the daemon names
	// it (not the shell beneath the mount, whose path reads the same).
	holder := exec.Command("sleep", "600")
	holder.Dir = filepath.Join(dir, "src")
	holder.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(ann.uid), Gid: uint32(ann.gid)}}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	r = ann.tine(filepath.Dir(dir), nil, "release", dir)
	holder.Process.Kill()
	holder.Wait()
	if want := fmt.Sprintf("is in use (pid %d sleep has its cwd in it): cd out of it or close it, and retry", holder.Process.Pid); r.code != 8 || !strings.Contains(r.stderr, want) {
		t.Fatalf("release while a process is in the workspace: %v; want exit 8 and %q", r, want)
	}
	requireOneLineError(t, r, 8)
	r = ann.tine(filepath.Dir(dir), nil, "release", dir)
	if r.code != 0 {
		t.Fatalf("release with node_modules beneath the mount: %v; want it moved aside", r)
	}
	aside, _ := filepath.Glob(dir + ".beneath-mount-*")
	if len(aside) != 1 || !strings.Contains(r.stdout, `moved "node_modules" into `+aside[0]+": written beneath the workspace's mount") {
		t.Fatalf("release: %v; moved aside into %v; want node_modules beside %s, and said", r, aside, dir)
	}
	rel := struct{ Aside string }{aside[0]}
	// tineuser reads what was beneath the mount, and owns where it went.
	cat := exec.Command("cat", filepath.Join(rel.Aside, "node_modules/left-pad/index.js"))
	cat.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(ann.uid), Gid: uint32(ann.gid)}}
	if out, err := cat.CombinedOutput(); err != nil || string(out) != "module.exports = 1\n" {
		t.Errorf("tineuser reading the moved file: %q, %v", out, err)
	}
	if uidOf(t, rel.Aside) != ann.uid {
		t.Errorf("%s is uid %d's, want tineuser's", rel.Aside, uidOf(t, rel.Aside))
	}
	if got, err := os.ReadFile(filepath.Join(dir, "src", "a.txt")); err != nil || string(got) != "a\n" {
		t.Errorf("released src/a.txt: %q, %v", got, err)
	}
	if fileExists(filepath.Join(dir, "node_modules")) {
		t.Error("node_modules, from beneath the mount, is in the released tree")
	}
	r = ann.tine(dir, nil, "init", ".")
	if r.code != 0 {
		t.Fatalf("init again after the release: %v", r)
	}
	if r := ann.tine(filepath.Dir(dir), nil, "release", dir); r.code != 0 || strings.Contains(r.stdout, "moved") {
		t.Errorf("release with nothing beneath its mount: %v; want nothing moved", r)
	}
}
