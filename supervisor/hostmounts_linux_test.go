package supervisor

import (
	"testing"

	"github.com/tinehq/tine/internal/mnt"
)

// A copy of a host mount is unmounted when the host unmounts the
// original, and only that copy: once the copy is gone its ID is reused by
// the next mount made anywhere, and a run's own /tmp that got it was
// unmounted in its stead, taking the workspace kept below it along (CI saw
// a fork's exec find its workspace read-only: what was left there was the
// host's source view, made read-only). Also never a copy at or beneath the
// workspace path, nor one the run mounted over.
func TestHostMounts_Releasable(t *testing.T) {
	copied := mnt.Info{ID: 42, Parent: 1, Dev: "0:50", Root: "/", Point: "/tmp/TestOther/disk"}
	ownTmp := mnt.Info{ID: 42, Parent: 1, Dev: "0:77", Root: "/", Point: "/tmp", FSType: "overlay"}
	h := &hostMounts{workspace: "/tmp/TestX/002/app"}
	cases := []struct {
		name   string
		own    []mnt.Info
		copied mnt.Info
		want   string
	}{
		{"the copy", []mnt.Info{{ID: 1, Point: "/"}, copied}, copied, copied.Point},
		{"its ID reused by the run's /tmp", []mnt.Info{{ID: 1, Point: "/"}, ownTmp}, copied, ""},
		{"gone already", []mnt.Info{{ID: 1, Point: "/"}}, copied, ""},
		{"the run's own mount over it", []mnt.Info{{ID: 1, Point: "/"}, copied, {ID: 43, Parent: 42, Dev: "0:9", Root: "/", Point: copied.Point}}, copied, ""},
		{"beneath the workspace", []mnt.Info{{ID: 7, Dev: "0:51", Root: "/", Point: h.workspace + "/sub"}}, mnt.Info{ID: 7, Dev: "0:51", Root: "/", Point: h.workspace + "/sub"}, ""},
	}
	for _, c := range cases {
		point, ok := h.releasable(c.own, c.copied)
		if point != c.want || ok != (c.want != "") {
			t.Errorf("%s: releasable = %q, %v; want %q", c.name, point, ok, c.want)
		}
	}
}
