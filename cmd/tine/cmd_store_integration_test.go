//go:build linux

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/internal/testkit"
	"github.com/tinehq/tine/postgres"
	"github.com/tinehq/tine/postgres/pgtest"
)

// TestStore_Postgres drives the real binary on a PostgreSQL store chosen
// by TINE_STORE_URL: init, fork, a change in the fork, merge and ls work as
// on SQLite, the records are in the database and no tine.db is made; the
// state directory's config.toml chooses the same store; and a store that
// is not the workspaces' own, a URL tine cannot use and a server that does
// not answer are refused with one line and their exit status.
func TestStore_Postgres(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	url := pgtest.URL(t)
	e := newEnv(t)
	base := e.vars
	e.vars = append(base, "TINE_STORE_URL="+url)
	ws := e.workspaceDir("repo")
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var ini jsonInit
	e.okJSON(&ini, "init", "--json", ws)
	var fk jsonFork
	e.okJSON(&fk, "fork", "source", "--json")
	if len(fk.Forks) != 1 {
		t.Fatalf("tine fork --json: %d forks, want 1", len(fk.Forks))
	}
	fork := fk.Forks[0].Name
	if err := os.WriteFile(filepath.Join(e.path(fork), "a.txt"), []byte("two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.ok("merge", fork)
	if b, err := os.ReadFile(filepath.Join(ws, "a.txt")); err != nil || string(b) != "two\n" {
		t.Errorf("a.txt after the merge: %q, %v; want the fork's", b, err)
	}
	if out := e.ok("ls"); !strings.Contains(out, fork) || !strings.Contains(out, "source") {
		t.Errorf("tine ls does not list source and %s:\n%s", fork, out)
	}
	if _, err := os.Stat(filepath.Join(e.home, "tine.db")); err == nil {
		t.Error("a tine.db was made in the state directory with a PostgreSQL store")
	}
	st, err := postgres.Open(url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	err = st.View(context.Background(), func(tx tine.Tx) error {
		w, err := tx.WorkspaceByPath(ws)
		if err != nil {
			return err
		}
		runs, err := tx.Runs(tine.RunFilter{Workspace: w.ID})
		if len(runs) != 2 {
			t.Errorf("the database holds %d runs of the workspace, want 2", len(runs))
		}
		return err
	})
	if err != nil {
		t.Errorf("the workspace in PostgreSQL: %v", err)
	}

	t.Run("Doctor", func(t *testing.T) {
		if out := e.ok("doctor"); !strings.Contains(out, "127.0.0.1") || strings.Contains(out, "tine.db") {
			t.Errorf("tine doctor does not name the PostgreSQL store:\n%s", out)
		}
		r := e.tine("doctor", "--rebuild")
		if r.code != exitUnsupported || !strings.Contains(r.stderr, "on a server") {
			t.Errorf("tine doctor --rebuild of a PostgreSQL store: exit %d, want %d\n%v", r.code, exitUnsupported, r)
		}
	})
	t.Run("ConfigFile", func(t *testing.T) {
		e.vars = base
		t.Cleanup(func() { e.vars = append(base, "TINE_STORE_URL="+url) })
		cfg := filepath.Join(e.home, "config.toml")
		if err := os.WriteFile(cfg, []byte("[store]\nurl = \""+url+"\"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(cfg)
		if out := e.ok("ls"); !strings.Contains(out, fork) {
			t.Errorf("tine ls with [store] url does not list %s:\n%s", fork, out)
		}
	})
	t.Run("Refused", func(t *testing.T) {
		for _, c := range []struct {
			name, url string
			code      int
			says      []string
		}{
			{"Foreign", pgtest.URL(t), exitStore, []string{"is not the one the workspaces"}},
			{"Scheme", "mysql://tine:secret@db/tine", exitUsage, []string{"mysql://tine:xxxxx@db/tine", "PostgreSQL"}},
			{"Unreachable", "postgres://tine:secret@127.0.0.1:1/tine?connect_timeout=2", exitError, []string{"127.0.0.1:1"}},
		} {
			t.Run(c.name, func(t *testing.T) {
				r := e.run(call{vars: []string{"TINE_STORE_URL=" + c.url}}, "ls")
				if r.code != c.code {
					t.Errorf("exit %d, want %d\n%v", r.code, c.code, r)
				}
				msg := strings.TrimSpace(r.stderr)
				if strings.Count(msg, "\n") > 0 || strings.Contains(msg, "secret") {
					t.Errorf("want one line without the password, got:\n%s", msg)
				}
				for _, s := range c.says {
					if !strings.Contains(msg, s) {
						t.Errorf("the error does not say %q:\n%s", s, msg)
					}
				}
			})
		}
	})
}
