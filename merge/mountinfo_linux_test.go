package merge

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestOverlayLowers(t *testing.T) {
	info := `22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw
90 22 0:50 / /work/ws rw,relatime - overlay overlay rw,lowerdir=/s/l2:/s/l\0401,upperdir=/s/u,workdir=/s/w,redirect_dir=on
91 22 0:51 / /work/new rw - overlay overlay rw,lowerdir+=/s/a,lowerdir+=/s/b\054c,upperdir=/s/u2,workdir=/s/w2
92 22 0:52 / /work/hidden rw - overlay overlay rw,lowerdir=/s/x,upperdir=/s/u3,workdir=/s/w3
93 22 0:53 / /work/hidden rw - tmpfs tmpfs rw
94 22 0:54 / /work/colon rw - overlay overlay rw,lowerdir=/s/a\:b:/s/c,upperdir=/s/u4,workdir=/s/w4
`
	for root, want := range map[string][]string{
		"/work/ws":     {"/s/l2", "/s/l 1"},
		"/work/new":    {"/s/a", "/s/b,c"},
		"/work/hidden": nil, // a tmpfs is mounted over the overlay
		"/work/colon":  {"/s/a:b", "/s/c"},
		"/work/none":   nil,
	} {
		if d := cmp.Diff(want, overlayLowers(info, root)); d != "" {
			t.Errorf("%s (-want +got):\n%s", root, d)
		}
	}
}
