package livefork

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/tinehq/tine/confine"
	"golang.org/x/sys/unix"
)

// A copy that cannot be given its confinement (here a seccomp program the
// kernel rejects) is not left running unconfined: the fork fails, the copy
// is killed and its origin goes on.
func TestFork_ConfineFailureKillsTheCopy(t *testing.T) {
	c := newCounter(t, "0.05", "sleep")
	writeFile(t, filepath.Join(c.fork, "out.txt"), "")
	bad := &confine.Plan{Filter: []byte{0xff, 0xff, 0, 0, 0, 0, 0, 0}} // no such BPF instruction
	res, err := forkOne(t, c.pid, c.targetFor(func(tg *Target) { tg.Confine = bad }))
	if err == nil || !errors.Is(err, unix.EINVAL) || res.Child == 0 {
		t.Fatalf("Fork = %+v, %v; want EINVAL from seccomp in the child", res, err)
	}
	t.Logf("%v", err)
	c.assertTicking(t)
	gone(t, res.Child)
}
