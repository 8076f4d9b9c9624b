package procfs

import (
	"os"
	"slices"
	"testing"
)

func TestParseStat(t *testing.T) {
	line := "4242 (we ird) (name)) S 1 4242 4240 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10\n"
	s, err := ParseStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	want := Stat{Pid: 4242, State: 'S', PPid: 1, PGrp: 4242, Session: 4240, StartTime: "987654"}
	if s != want {
		t.Errorf("got %+v, want %+v", s, want)
	}
	for _, bad := range []string{"", "12", "12 (x) S 1 2", "x (y) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20", "1 (a) S x 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20"} {
		if _, err := ParseStat([]byte(bad)); err == nil {
			t.Errorf("ParseStat(%q) = nil error", bad)
		}
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
