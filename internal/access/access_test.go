package access

import (
	"testing"

	"github.com/tinehq/tine"
)

func TestCallerMayUse(t *testing.T) {
	c := New(1001, 1001, 4100)
	var all *Caller
	for _, tc := range []struct {
		uid    int
		groups []int
		want   bool
	}{{1001, nil, true}, {1002, nil, false}, {1002, []int{4100}, true}, {1002, []int{4200}, false}} {
		ws := workspace(tc.uid, tc.groups)
		if got := c.MayUse(ws); got != tc.want {
			t.Errorf("MayUse(owner %d, groups %v) = %v", tc.uid, tc.groups, got)
		}
		if !all.MayUse(ws) {
			t.Error("a nil caller may not use a workspace")
		}
	}
}

func workspace(uid int, groups []int) *tine.Workspace {
	return &tine.Workspace{UID: uid, Groups: groups}
}
