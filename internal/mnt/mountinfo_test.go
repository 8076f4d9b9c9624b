package mnt

import (
	"slices"
	"strings"
	"testing"
)

func TestUnescape(t *testing.T) {
	for in, want := range map[string]string{
		`/a\040b`: "/a b", `/a\134b`: `/a\b`, `/t\011`: "/t\t", `/plain`: "/plain", `/bad\04`: `/bad\04`, `/x\999`: `/x\999`,
	} {
		if got := Unescape(in); got != want {
			t.Errorf("Unescape(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseInfo(t *testing.T) {
	text := "22 1 0:21 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n" +
		"garbage\n" +
		"35 22 0:30 /sub /mnt/a\\040b rw master:2 - tmpfs my\\040fs rw,size=10k\n" +
		"36 x 0:31 / /bad rw - tmpfs t rw\n"
	got, err := ParseInfo(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	want := []Info{
		{ID: 22, Parent: 1, Dev: "0:21", Root: "/", Point: "/", FSType: "ext4", Source: "/dev/sda1", Super: "rw"},
		{ID: 35, Parent: 22, Dev: "0:30", Root: "/sub", Point: "/mnt/a b", FSType: "tmpfs", Source: "my fs", Super: "rw,size=10k"},
	}
	if len(got) != len(want) {
		t.Fatalf("ParseInfo = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestBelow(t *testing.T) {
	infos := []Info{{Point: "/"}, {Point: "/s/ws"}, {Point: "/s/ws/runs/a/view"}, {Point: "/s/wsx/view"},
		{Point: "/s/ws/runs/a/view/sub"}, {Point: "/s/ws/runs/a/view"}, {Point: "/s/ws/runs/b/view"}}
	got := Below(infos, "/s/ws/")
	want := []string{"/s/ws/runs/a/view/sub", "/s/ws/runs/a/view", "/s/ws/runs/b/view"}
	if !slices.Equal(got, want) {
		t.Fatalf("Below = %q, want %q", got, want)
	}
}
