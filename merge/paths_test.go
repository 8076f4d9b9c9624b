package merge

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tinehq/tine"
)

func TestCheckPaths(t *testing.T) {
	root := t.TempDir() // where the files are read: a fork's view under the state directory
	ws := "/home/u/app" // the workspace path, where every run sees them
	outside := t.TempDir()
	writeTree(t, root, tree{
		"src": dir(), "src/a.go": file("a"), "in": link("src"), "up": link("../x"),
		"abs-out": link(outside), "abs-in": link(filepath.Join(ws, "src")), "src/back": link(".."),
		"src/esc": link("../../etc"), "loop": link("loop"), "abs-view": link(filepath.Join(root, "src")),
	})
	tests := []struct {
		name  string
		paths []string
		want  []string
		bad   string // part of the error message, "" for success
	}{
		{"Clean", []string{"src/a.go", "./src//", "src", "new/file"}, []string{"src/a.go", "src", "new/file"}, ""},
		{"Root", []string{"."}, []string{"."}, ""},
		{"SymlinkInside", []string{"in/a.go", "abs-in/a.go", "src/back/src"}, []string{"in/a.go", "abs-in/a.go", "src/back/src"}, ""},
		{"NameWithSpaceAndNewline", []string{"a b/c\nd", "\xff"}, []string{"a b/c\nd", "\xff"}, ""},
		{"Empty", []string{""}, nil, "empty path"},
		{"Absolute", []string{"/etc/passwd"}, nil, "absolute"},
		{"DotDot", []string{"src/../../x"}, nil, `".."`},
		{"DotDotInside", []string{"src/../src"}, nil, `".."`},
		{"SymlinkUp", []string{"up"}, nil, "outside the workspace"},
		{"SymlinkUpBelow", []string{"up/file"}, nil, "outside the workspace"},
		{"SymlinkAbsoluteOut", []string{"abs-out/x"}, nil, "outside the workspace"},
		{"SymlinkToTheViewsOwnPath", []string{"abs-view/a.go"}, nil, "outside the workspace"},
		{"SymlinkEscapesViaParent", []string{"src/esc"}, nil, "outside the workspace"},
		{"SymlinkLoop", []string{"loop"}, nil, "too many symlinks"},
		{"Staging", []string{".tine-merge-abc/f"}, nil, "staging"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CheckPaths(root, ws, tt.paths)
			if tt.bad == "" {
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(tt.want, got); d != "" {
					t.Errorf("paths (-want +got):\n%s", d)
				}
				return
			}
			if !errors.Is(err, tine.ErrInvalid) || !strings.Contains(err.Error(), tt.bad) {
				t.Errorf("CheckPaths(%q) = %v, want ErrInvalid mentioning %q", tt.paths, err, tt.bad)
			}
			if err != nil && (strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), tt.paths[0][:min(len(tt.paths[0]), 3)])) {
				t.Errorf("error %q is not one line naming the path", err)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(outside, "x")); err == nil {
		t.Error("CheckPaths created something outside")
	}
}
