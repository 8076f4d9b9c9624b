package sqlite

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/store/storetest"
)

func TestStore_OpenDamaged(t *testing.T) {
	t.Run("NotADatabase", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "tine.db")
		junk := make([]byte, 8192)
		for i := range junk {
			junk[i] = byte(i*7 + 3)
		}
		if err := os.WriteFile(path, junk, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := Open(path)
		if err == nil {
			s.Close()
			t.Fatal("Open of a file that is not a database succeeded")
		}
		if !errors.Is(err, tine.ErrStore) {
			t.Errorf("Open = %v, want tine.ErrStore", err)
		}
		if b, _ := os.ReadFile(path); len(b) != len(junk) {
			t.Errorf("the damaged file was rewritten: %d bytes", len(b))
		}
	})
	t.Run("CorruptPage", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "tine.db")
		s, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 200; i++ {
			w := &tine.Workspace{ID: tine.NewID(tine.PrefixWorkspace), Name: "w" + tine.NewID(""), Path: "/p/" + tine.NewID(""), Backend: "copy", CreatedAt: storetest.At(1)}
			storetest.Update(t, s, func(tx tine.Tx) error { return tx.PutWorkspace(w) })
		}
		s.Close()
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		// Garble the pages after the schema (page 1) with a pattern that
		// breaks the b-tree headers.
		fi, _ := f.Stat()
		junk := make([]byte, fi.Size()-8192)
		for i := range junk {
			junk[i] = 0xA5
		}
		if _, err := f.WriteAt(junk, 8192); err != nil {
			t.Fatal(err)
		}
		f.Close()
		s, err = Open(path)
		if err == nil {
			defer s.Close()
			err = s.Check(context.Background())
		}
		if !errors.Is(err, tine.ErrStore) {
			t.Errorf("Open+Check of a damaged store = %v, want tine.ErrStore", err)
		}
	})
}

// benchmarkCommit measures one small committed Update (an event appended)
// with the given synchronous setting, on the test's temporary filesystem.
func benchmarkCommit(b *testing.B, synchronous string) {
	s, err := openWith(filepath.Join(b.TempDir(), "tine.db"), synchronous)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	ev := &tine.Event{Time: storetest.At(1), Kind: "bench"}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := s.Update(ctx, func(tx tine.Tx) error { return tx.AppendEvent(ev) }); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCommit compares a commit's cost under synchronous=NORMAL (the
// old setting) and FULL (what Open uses), in the same run; docs/benchmarks.md
// records the ratio under "Store durability".
func BenchmarkCommit(b *testing.B) {
	b.Run("NORMAL", func(b *testing.B) { benchmarkCommit(b, syncNormal) })
	b.Run("FULL", func(b *testing.B) { benchmarkCommit(b, syncFull) })
}

// BenchmarkCheck measures the integrity check every command's Open runs,
// on a store of 2,000 events and 200 workspaces.
func BenchmarkCheck(b *testing.B) {
	s := openTest(b)
	ctx := context.Background()
	for i := 0; i < 200; i++ {
		w := &tine.Workspace{ID: tine.NewID(tine.PrefixWorkspace), Name: "w" + tine.NewID(""), Path: "/p/" + tine.NewID(""), Backend: "copy", CreatedAt: storetest.At(1)}
		storetest.Update(b, s, func(tx tine.Tx) error {
			for j := 0; j < 10; j++ {
				if err := tx.AppendEvent(&tine.Event{Time: storetest.At(1), Kind: "bench", Detail: []byte(`{"a":"some detail text"}`)}); err != nil {
					return err
				}
			}
			return tx.PutWorkspace(w)
		})
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := s.Check(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
