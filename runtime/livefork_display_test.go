package runtime

import (
	"errors"
	"io"
	"testing"

	"github.com/tinehq/tine/livefork"
)

// socketEnds pairs the connection between two dumped members, and gives
// an end whose peer is closed for a peer outside the group or not dumped.
func TestSocketEnds(t *testing.T) {
	links := [][]livefork.UnixLink{
		{{Ino: 1, Peer: 2}, {Ino: 3, Peer: 9}, {Ino: 5, Peer: 6}}, // the X server: a client, a VNC client, a refused client
		{{Ino: 2, Peer: 1}},
		{{Ino: 6, Peer: 5}},
	}
	dumps := []displayDump{{}, {}, {err: errors.New("refused")}}
	ends, err := socketEnds(dumps, links)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, e := range ends {
			for _, f := range e {
				f.Close()
			}
		}
	}()
	if len(ends[0]) != 3 || len(ends[1]) != 1 || len(ends[2]) != 0 {
		t.Fatalf("ends: %v", ends)
	}
	if _, err := ends[0][1].Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	if _, err := io.ReadFull(ends[1][2], b); err != nil || b[0] != 'x' {
		t.Errorf("the X server's end 1 does not reach the client's end 2: %q %v", b, err)
	}
	for _, ino := range []uint64{3, 5} {
		if n, err := ends[0][ino].Read(b); n != 0 || err != io.EOF {
			t.Errorf("end %d, whose peer is not restored: read %d, %v; want end of file", ino, n, err)
		}
	}
}
