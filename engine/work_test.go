package engine

import (
	"reflect"
	"testing"

	"github.com/tinehq/tine/config"
	"github.com/tinehq/tine/layer"
	"github.com/tinehq/tine/merge"
)

func TestDropByproducts(t *testing.T) {
	changes := []layer.Change{
		{Path: "calc.py", Kind: layer.Modified, Type: "file"},
		{Path: "empty", Kind: layer.Added, Type: "dir"},
		{Path: "node_modules", Kind: layer.Added, Type: "dir"},
		{Path: "node_modules/.cache", Kind: layer.Added, Type: "dir"},
		{Path: "node_modules/.cache/x.json", Kind: layer.Added, Type: "file"},
		{Path: "tests/__pycache__", Kind: layer.Added, Type: "dir"},
		{Path: "tests/__pycache__/t.pyc", Kind: layer.Added, Type: "file"},
	}
	got := dropByproducts(changes, config.DefaultByproducts)
	want := []layer.Change{changes[0], changes[1]}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("dropByproducts = %+v, want %+v (node_modules held only a cache)", got, want)
	}
}

func TestNewWork(t *testing.T) {
	changes := []layer.Change{
		{Path: ".git/objects/ab/cdef", Kind: layer.Added, Type: "file"},
		{Path: ".git/index", Kind: layer.Modified, Type: "file"},
		{Path: "sub/.git/HEAD", Kind: layer.Modified, Type: "file"},
		{Path: "a.txt", Kind: layer.Added, Type: "file"},
		{Path: "ignored.log", Kind: layer.Added, Type: "file"},
	}
	p := &merge.Plan{Entries: []merge.Entry{{Path: "a.txt"}}}
	if w := newWork(ScopeGit, changes, p, nil); w.Files() != 1 || w.Changes[0].Path != "a.txt" {
		t.Errorf("git scope: %+v, want a.txt alone (what git stages)", w.Changes)
	}
	if w := newWork(ScopeFilesystem, changes, p, nil); w.Files() != 2 {
		t.Errorf("filesystem scope: %+v, want a.txt and ignored.log (no .git internals)", w.Changes)
	}
}
