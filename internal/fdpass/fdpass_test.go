package fdpass

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// The descriptors a message carries come back as files that are
// close-on-exec and refer to what was sent.
func TestFiles(t *testing.T) {
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(pair[0])
	defer unix.Close(pair[1])
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if err := unix.Sendmsg(pair[0], []byte{0}, unix.UnixRights(int(r.Fd()), int(w.Fd())), nil, 0); err != nil {
		t.Fatal(err)
	}
	buf, oob := make([]byte, 1), make([]byte, unix.CmsgSpace(2*4))
	_, oobn, _, _, err := unix.Recvmsg(pair[1], buf, oob, 0)
	if err != nil {
		t.Fatal(err)
	}
	files, err := Files(oob[:oobn], "test")
	if err != nil || len(files) != 2 {
		t.Fatalf("Files = %v, %v", files, err)
	}
	for _, f := range files {
		defer f.Close()
		flags, err := unix.FcntlInt(f.Fd(), unix.F_GETFD, 0)
		if err != nil || flags&unix.FD_CLOEXEC == 0 {
			t.Errorf("%s: flags %#x, %v: not close-on-exec", f.Name(), flags, err)
		}
	}
	if _, err := files[1].Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 1)
	if _, err := files[0].Read(got); err != nil || got[0] != 'x' {
		t.Errorf("the received pipe read %q, %v", got, err)
	}
	if files, err := Files(nil, "none"); files != nil || err != nil {
		t.Errorf("no control messages: %v, %v", files, err)
	}
}
