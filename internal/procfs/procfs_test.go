package procfs

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// A command name holding spaces and parentheses: fields are counted from
// the last ')'. A line that is not a stat line is an error.
func TestRead_Names(t *testing.T) {
	root := t.TempDir()
	write := func(pid, line string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(root, pid), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, pid, "stat"), []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("4242", "4242 (we ird) (name)) S 1 4242 4240 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 8245248 224 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n")
	s, err := Read(root, 4242)
	if err != nil {
		t.Fatal(err)
	}
	want := Stat{Pid: 4242, State: 'S', PPid: 1, PGrp: 4242, Session: 4240, StartTime: "987654"}
	if s != want {
		t.Errorf("got %+v, want %+v", s, want)
	}
	for i, bad := range []string{"", "12", "12 (x) S 1 2", "1 (a) S x 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20"} {
		pid := strconv.Itoa(100 + i)
		write(pid, bad)
		if _, err := Read(root, 100+i); err == nil {
			t.Errorf("Read of %q = nil error", bad)
		}
	}
	all, err := All(root)
	if err != nil || len(all) != 1 || all[0] != want {
		t.Errorf("All = %+v, %v; want only %+v", all, err, want)
	}
}

func TestReadSelf(t *testing.T) {
	s, err := Read("", os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if s.Pid != os.Getpid() || s.PPid != os.Getppid() || s.StartTime == "" {
		t.Errorf("self: %+v (ppid %d)", s, os.Getppid())
	}
	all, err := All("")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(all, func(p Stat) bool { return p.Pid == os.Getpid() }) {
		t.Error("All does not list this process")
	}
}

func TestTree(t *testing.T) {
	procs := []Stat{
		{Pid: 1, PPid: 0, Session: 1},
		{Pid: 10, PPid: 1, Session: 10},  // the command, a session leader
		{Pid: 11, PPid: 10, Session: 10}, // its child
		{Pid: 12, PPid: 1, Session: 10},  // orphaned into pid 1, same session
		{Pid: 13, PPid: 11, Session: 13}, // child that made its own session
		{Pid: 14, PPid: 13, Session: 13}, // and its child
		{Pid: 20, PPid: 1, Session: 20},  // unrelated
		{Pid: 21, PPid: 20, Session: 20},
	}
	got := Tree(procs, 10, 10)
	if want := []int{10, 11, 12, 13, 14}; !slices.Equal(got, want) {
		t.Errorf("Tree = %v, want %v", got, want)
	}
	if got := Tree(procs, 20, 0); !slices.Equal(got, []int{20, 21}) {
		t.Errorf("Tree without session = %v", got)
	}
}
