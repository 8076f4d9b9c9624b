//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tinehq/tine/internal/testkit"
	"github.com/tinehq/tine/livefork"
)

// TestDoctor_LostStore is the regression for the bug where, with tine.db
// missing or truncated to 0 bytes, the next command (even tine ls) made a
// fresh store and its sweeper deleted every layer and run: a workspace of
// 20 files showed none afterwards, exit status 0.
func TestDoctor_LostStore(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	for _, spoil := range []string{"missing", "truncated"} {
		t.Run(spoil, func(t *testing.T) {
			e := newEnv(t)
			ws := e.workspaceDir("ws")
			for i := range 20 {
				if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("f%02d.txt", i)), []byte("user file\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			e.ok("init", "--backend", "overlay", ws)
			e.ok("fork", "source")
			db := filepath.Join(e.home, "tine.db")
			if spoil == "missing" {
				for _, s := range []string{"", "-wal", "-shm"} {
					os.Remove(db + s)
				}
			} else if err := os.Truncate(db, 0); err != nil {
				t.Fatal(err)
			}
			for _, cmd := range [][]string{{"ls"}, {"ls"}, {"fork", "source"}} {
				r := e.tine(cmd...)
				requireOneLineError(t, r, exitStore)
				if !strings.Contains(r.stderr, "tine doctor") {
					t.Errorf("the refusal does not point at tine doctor: %q", r.stderr)
				}
			}
			if ents, _ := os.ReadDir(ws); len(ents) != 20 {
				t.Errorf("the workspace shows %d entries, want its 20 files", len(ents))
			}
			r := e.tine("doctor")
			if r.code != exitStore || !strings.Contains(r.stdout, "store: "+db+": ") || !strings.Contains(r.stdout, "--set-aside") {
				t.Errorf("tine doctor on a lost store:\n%v", r)
			}
			var rep struct {
				Store struct {
					State string `json:"state"`
				} `json:"store"`
			}
			if r := e.tine("doctor", "--json"); json.Unmarshal([]byte(r.stdout), &rep) != nil || rep.Store.State == "" || rep.Store.State == "ok" {
				t.Errorf("tine doctor --json: %v", r)
			}
			e.ok("doctor", "--set-aside")
			if out := e.ok("ls"); strings.Contains(out, "source") {
				t.Errorf("tine ls after --set-aside still lists the old workspace:\n%s", out)
			}
			var files int
			filepath.WalkDir(filepath.Join(e.home, "quarantine"), func(p string, d os.DirEntry, err error) error {
				if err == nil && d.Type().IsRegular() && strings.HasPrefix(d.Name(), "f") && strings.HasSuffix(d.Name(), ".txt") {
					files++
				}
				return nil
			})
			if files < 20 {
				t.Errorf("the quarantine holds %d of the 20 user files", files)
			}
			if r := e.tine("doctor", "--purge", "--set-aside"); r.code != exitUsage {
				t.Errorf("--purge with --set-aside: %v", r)
			}
		})
	}
}

// TestDoctor_AgentVersions is issue 26's "agent versions are a range":
// tine doctor finds claude and codex on the caller's PATH and places each
// release in the supported range CI tests (the oldest and the newest): a
// release in range is supported, an older one is named with what it lacks,
// a missing one says fork-runs with it fail.
func TestDoctor_AgentVersions(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	e := newEnv(t)
	bin := t.TempDir()
	for name, out := range map[string]string{"claude": "2.0.14 (Claude Code)", "codex": "codex-cli 0.165.0"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\necho '"+out+"'\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var rep struct {
		Agents []struct {
			Kind, Version, Verdict, Note string
		} `json:"agents"`
	}
	r := e.run(call{vars: []string{"PATH=" + bin + ":/usr/bin:/bin"}}, "doctor", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || len(rep.Agents) != 2 {
		t.Fatalf("doctor --json: %v %v", err, r)
	}
	want := map[string]string{"claude": "older", "codex": "supported"}
	for _, a := range rep.Agents {
		if a.Verdict != want[a.Kind] {
			t.Errorf("%s %s: %s (%s), want %s", a.Kind, a.Version, a.Verdict, a.Note, want[a.Kind])
		}
	}
	if !strings.Contains(rep.Agents[0].Note, "older than 2.1.197") {
		t.Errorf("claude's note does not say what is supported: %q", rep.Agents[0].Note)
	}
	r = e.run(call{vars: []string{"PATH=" + t.TempDir()}}, "doctor")
	if !strings.Contains(r.stdout, "claude is not on PATH") || !strings.Contains(r.stdout, "codex is not on PATH") {
		t.Errorf("doctor with no agents on PATH:\n%v", r)
	}
}

// TestDoctor_LiveForkEngines: tine doctor says which live-fork engines this host has, and why not:
// here ptrace, and CRIU when it is installed at version 4 and criu check
// passes; a criu older than 4 first on the PATH is named, with its
// version.
func TestDoctor_LiveForkEngines(t *testing.T) {
	e := newEnv(t)
	var d struct {
		LiveFork []livefork.Engine `json:"live_fork"`
	}
	e.okJSON(&d, "doctor", "--json")
	if len(d.LiveFork) != 2 || d.LiveFork[0].Name != "ptrace" || d.LiveFork[1].Name != "criu" {
		t.Fatalf("tine doctor's live-fork engines: %+v", d.LiveFork)
	}
	if crit := d.LiveFork[1]; crit.Available != (livefork.CRIUProbe(context.Background()) == nil) {
		t.Errorf("criu: %+v", crit)
	}
	old := t.TempDir()
	fake := "#!/bin/sh\necho 'Version: 3.17'\n"
	if err := os.WriteFile(filepath.Join(old, "criu"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	out := e.run(call{vars: []string{"PATH=" + old + ":" + os.Getenv("PATH")}}, "doctor").stdout
	if !strings.Contains(out, "live-fork engines:\n  ptrace: available\n  criu 3.17: unavailable: criu 3.17 is older than 4") {
		t.Errorf("tine doctor with criu 3.17 on the PATH says:\n%s", out)
	}
}
