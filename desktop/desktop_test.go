package desktop

import (
	"bytes"
	"encoding/binary"
	"errors"
	"image/color"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// xwdDump is an XWD file of w×h pixels of 32 bits, least significant byte
// first, with masks rgb = ff0000, 00ff00, 0000ff, each pixel made by px.
func xwdDump(w, h int, name string, px func(x, y int) uint32) []byte {
	var b bytes.Buffer
	hdr := xwdHeader{HeaderSize: uint32(xwdHeaderSz + len(name) + 1), Version: xwdVersion, Format: xwdZPixmap,
		Depth: 24, Width: uint32(w), Height: uint32(h), BitsPerPixel: 32, BytesPerLine: uint32(4*w + 8),
		VisualClass: 4, RedMask: 0xff0000, GreenMask: 0xff00, BlueMask: 0xff, NColors: 2}
	binary.Write(&b, binary.BigEndian, hdr)
	b.WriteString(name + "\x00")
	b.Write(make([]byte, 2*12)) // the colour map, unused
	for y := range h {
		for x := range w {
			binary.Write(&b, binary.LittleEndian, px(x, y))
		}
		b.Write(make([]byte, 8)) // padding to BytesPerLine
	}
	return b.Bytes()
}

func TestDecodeXWD(t *testing.T) {
	dump := xwdDump(3, 2, "xwdump", func(x, y int) uint32 { return uint32(x*0x40)<<16 | uint32(y*0x80)<<8 | 0x11 })
	img, err := DecodeXWD(dump)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 3 || b.Dy() != 2 {
		t.Fatalf("bounds %v", b)
	}
	if got, want := color.NRGBAModel.Convert(img.At(2, 1)), (color.NRGBA{0x80, 0x80, 0x11, 0xff}); got != want {
		t.Errorf("pixel 2,1 = %v, want %v", got, want)
	}
}

func TestDecodeXWD_Refuses(t *testing.T) {
	good := xwdDump(2, 2, "x", func(x, y int) uint32 { return 0 })
	bad := map[string][]byte{
		"empty":     nil,
		"truncated": good[:len(good)-5],
		"version":   append([]byte{0, 0, 0, 101, 0, 0, 0, 6}, good[8:]...),
	}
	huge := slices.Clone(good)
	binary.BigEndian.PutUint32(huge[16:], 1<<20) // width
	bad["huge"] = huge
	claims := slices.Clone(good) // 8000×8000 in the header, 2×2 of rows
	binary.BigEndian.PutUint32(claims[16:], 8000)
	binary.BigEndian.PutUint32(claims[20:], 8000)
	binary.BigEndian.PutUint32(claims[48:], 4*8000+8)
	bad["more than it holds"] = claims
	for name, b := range bad {
		if _, err := DecodeXWD(b); !errors.Is(err, ErrXWD) {
			t.Errorf("%s: %v, want ErrXWD", name, err)
		}
	}
}

func TestInputArgs(t *testing.T) {
	for _, c := range []struct {
		in   Input
		want string
	}{
		{Input{Action: "click", X: 10, Y: 20}, "xdotool mousemove --sync 10 20 click 1"},
		{Input{Action: "move", X: 1, Y: 2}, "xdotool mousemove --sync 1 2"},
		{Input{Action: "type", Text: "-rf hello"}, "xdotool type --delay 12 -- -rf hello"},
		{Input{Action: "key", Text: "ctrl+l"}, "xdotool key -- ctrl+l"},
	} {
		args, err := c.in.Args()
		if len(args) > 0 {
			args[0] = filepath.Base(args[0])
		}
		if err != nil || strings.Join(args, " ") != c.want {
			t.Errorf("%+v: %q %v, want %q", c.in, args, err, c.want)
		}
	}
	for _, in := range []Input{{Action: "click", X: -1}, {Action: "key"}, {Action: "wave"}} {
		if _, err := in.Args(); err == nil {
			t.Errorf("%+v: no error", in)
		}
	}
}

func TestStack(t *testing.T) {
	s := Stack(800, 600)
	if len(s) != 2 || s[0].Name != ServiceX || s[1].Name != ServiceWM {
		t.Fatalf("stack %+v", s)
	}
	for _, want := range []string{"Xvnc :0", "-geometry 800x600", "-rfbunixpath /tmp/.tine-vnc", "-nolisten tcp", "-nolisten unix"} {
		if !strings.Contains(s[0].Command, want) {
			t.Errorf("the X server's command %q lacks %q", s[0].Command, want)
		}
	}
	// Ready when X takes clients, not when the VNC socket is there; the
	// window manager when it manages the screen.
	if !strings.Contains(s[0].ReadyCommand, "getdisplaygeometry") || !strings.Contains(s[0].ReadyCommand, VNCSocket) {
		t.Errorf("the X server's ready check %q", s[0].ReadyCommand)
	}
	if !strings.Contains(s[1].Command, "--startup 'touch "+wmReady+"'") || s[1].ReadyCommand != "test -e "+wmReady {
		t.Errorf("the window manager %q is ready on %q", s[1].Command, s[1].ReadyCommand)
	}
}
