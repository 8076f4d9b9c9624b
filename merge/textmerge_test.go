package merge

import (
	"context"
	"github.com/tinehq/tine/merge/internal/plan"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// lines joins numbered lines, replacing some.
func lines(repl map[int]string) string {
	s := ""
	for i := 1; i <= 9; i++ {
		if r, ok := repl[i]; ok {
			s += r + "\n"
			continue
		}
		s += "line " + string(rune('0'+i)) + "\n"
	}
	return s
}

func TestPlanFiles_TextMerge(t *testing.T) {
	binary := "\x00\x01\x02" + lines(nil)
	base := tree{"ok.txt": file(lines(nil)), "clash.txt": file(lines(nil)), "bin": file(binary),
		"db.sqlite": file(sqliteMagic + lines(nil)), "mode.sh": file(lines(nil))}
	theirs := tree{"ok.txt": file(lines(map[int]string{1: "run"})), "clash.txt": file(lines(map[int]string{5: "run"})),
		"bin": file(binary + "run"), "db.sqlite": file(sqliteMagic + lines(map[int]string{1: "run"})),
		"mode.sh": file(lines(map[int]string{1: "run"}))}
	ours := tree{"ok.txt": file(lines(map[int]string{9: "target"})), "clash.txt": file(lines(map[int]string{5: "target"})),
		"bin": file("target" + binary), "db.sqlite": file(sqliteMagic + lines(map[int]string{9: "target"})),
		"mode.sh": fileMode(lines(map[int]string{9: "target"}), 0o755)}
	s := makeSides(t, base, theirs, ours)
	p := planSides(t, s, PlanOptions{TextMerge: true, Scratch: t.TempDir()})
	want := map[string]string{
		"ok.txt":    "text_merged",
		"mode.sh":   "text_merged",
		"clash.txt": "conflict: overlapping text changes",
		"bin":       "conflict: changed in both (not text: never merged line-wise)",
		"db.sqlite": "conflict: changed in both (not text: never merged line-wise)",
	}
	if d := cmp.Diff(want, actions(p)); d != "" {
		t.Fatalf("actions (-want +got):\n%s", d)
	}
	for _, e := range p.Entries {
		if e.Action != TextMerged {
			continue
		}
		got, err := os.ReadFile(e.Source)
		if err != nil {
			t.Fatal(err)
		}
		if w := lines(map[int]string{1: "run", 9: "target"}); string(got) != w || e.Bytes != int64(len(w)) {
			t.Errorf("%s merged to %q (%d bytes), want %q", e.Path, got, e.Bytes, w)
		}
		fi, _ := os.Stat(e.Source)
		if wantMode := map[string]os.FileMode{"ok.txt": 0o644, "mode.sh": 0o755}[e.Path]; fi.Mode().Perm() != wantMode {
			t.Errorf("%s merged with mode %v, want %v", e.Path, fi.Mode().Perm(), wantMode)
		}
	}
}

func TestPlanFiles_TextMergeApplies(t *testing.T) {
	base := tree{"a.txt": file(lines(nil))}
	s := makeSides(t, base, tree{"a.txt": file(lines(map[int]string{2: "run"}))}, tree{"a.txt": file(lines(map[int]string{8: "target"}))})
	p := planSides(t, s, PlanOptions{TextMerge: true, Scratch: t.TempDir()})
	if err := Apply(context.Background(), p, s.ours, journalPath(t), ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	want := tree{"a.txt": file(lines(map[int]string{2: "run", 8: "target"}))}.manifest()
	if d := cmp.Diff(want, treeManifest(t, s.ours)); d != "" {
		t.Errorf("target (-want +got):\n%s", d)
	}
}

func TestPlanFiles_TextMergeWithoutOption(t *testing.T) {
	base := tree{"a.txt": file(lines(nil))}
	s := makeSides(t, base, tree{"a.txt": file(lines(map[int]string{2: "run"}))}, tree{"a.txt": file(lines(map[int]string{8: "target"}))})
	if got := actions(planSides(t, s, PlanOptions{}))["a.txt"]; got != "conflict: changed in both" {
		t.Errorf("a.txt: %q, want a conflict without --text-merge", got)
	}
}

func TestMergeModes(t *testing.T) {
	tests := []struct {
		base, theirs, ours, want os.FileMode
		ok                       bool
	}{
		{0o644, 0o644, 0o600, 0o600, true},
		{0o644, 0o755, 0o644, 0o755, true},
		{0o644, 0o755, 0o755, 0o755, true},
		{0o644, 0o755, 0o600, 0, false},
	}
	for _, tt := range tests {
		got, ok := mergeModes(tt.base, tt.theirs, tt.ours)
		if got != tt.want || ok != tt.ok {
			t.Errorf("mergeModes(%v, %v, %v) = %v, %v; want %v, %v", tt.base, tt.theirs, tt.ours, got, ok, tt.want, tt.ok)
		}
	}
}

func TestIsTextFile(t *testing.T) {
	dir := t.TempDir()
	v := plan.NewView(dir)
	tests := []struct {
		name string
		data []byte
		want bool
	}{
		{"text", []byte("hello\nworld\n"), true},
		{"empty", nil, true},
		{"nul", []byte("a\x00b"), false},
		{"nulLate", append(make([]byte, 0, textSniffBytes+10), append([]byte(strings.Repeat("a", textSniffBytes)), 0)...), true},
		{"sqlite", []byte(sqliteMagic + "rest"), false},
		{"huge", []byte(strings.Repeat("a\n", textMaxBytes/2)), false},
	}
	for _, tt := range tests {
		p := filepath.Join(dir, tt.name)
		if err := os.WriteFile(p, tt.data, 0o644); err != nil {
			t.Fatal(err)
		}
		fi, _ := os.Lstat(p)
		if got, err := isTextFile(v, tt.name, fi); err != nil || got != tt.want {
			t.Errorf("%s: isTextFile = %v, %v; want %v", tt.name, got, err, tt.want)
		}
	}
}
