// Command tilefps measures how many frames per second a VNC client gets
// of a run's display: it speaks RFB (version 3.8, no security, the Raw and
// CopyRect encodings) either through the daemon's WebSocket bridge, as a
// dashboard tile does, or straight to the X server's VNC socket, and asks
// for the next incremental update as soon as one arrives, as noVNC does.
// It prints one JSON line: the updates received, per second, and the
// bytes of pixels per second. With -hold it only stays connected.
//
//	go run ./bench/tilefps -sock $TINE_HOME/ctl/tine.sock -run RUN_ID -seconds 10
//	go run ./bench/tilefps -direct XVNC_HOST_PID -seconds 10
package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/coder/websocket"
	"github.com/tinehq/tine/desktop"
)

func main() {
	sock := flag.String("sock", "", "the daemon's unix socket, to go through its WebSocket bridge")
	run := flag.String("run", "", "the run (id or name) whose display to watch through the bridge")
	direct := flag.Int("direct", 0, "the host pid of the X server, to connect to its VNC socket directly")
	seconds := flag.Float64("seconds", 10, "how long to count")
	hold := flag.Bool("hold", false, "only connect and stay connected for -seconds, asking for nothing (the daemon then counts the display as watched)")
	flag.Parse()
	ctx := context.Background()
	d := time.Duration(*seconds * float64(time.Second))
	conn, err := dial(ctx, *sock, *run, *direct)
	switch {
	case err == nil && *hold:
		_, _, _, err = handshake(conn, bufio.NewReader(conn))
		time.Sleep(d)
	case err == nil:
		err = measure(conn, d)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tilefps:", err)
		os.Exit(1)
	}
}

func dial(ctx context.Context, sock, run string, direct int) (net.Conn, error) {
	if direct > 0 {
		return desktop.DialVNC(ctx, direct)
	}
	if sock == "" || run == "" {
		return nil, errors.New("give -sock and -run, or -direct")
	}
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	c, _, err := websocket.Dial(ctx, "ws://tine/v1/runs/"+run+"/vnc", &websocket.DialOptions{HTTPClient: hc, Subprotocols: []string{"binary"}})
	if err != nil {
		return nil, err
	}
	c.SetReadLimit(64 << 20)
	return websocket.NetConn(context.Background(), c, websocket.MessageBinary), nil
}

// result is what measure prints.
type result struct {
	Updates    int     `json:"updates"`
	Seconds    float64 `json:"seconds"`
	FPS        float64 `json:"fps"`
	MBPerSec   float64 `json:"mb_per_s"`
	Width      int     `json:"width"`
	Height     int     `json:"height"`
	Rectangles int     `json:"rectangles"`
}

func measure(conn net.Conn, d time.Duration) error {
	defer conn.Close()
	r := bufio.NewReaderSize(conn, 1<<20)
	w, h, bpp, err := handshake(conn, r)
	if err != nil {
		return err
	}
	// CopyRect (1), then Raw (0).
	setEnc := []byte{2, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0}
	if _, err := conn.Write(setEnc); err != nil {
		return err
	}
	res := result{Width: w, Height: h}
	var pixels int64
	if err := request(conn, false, w, h); err != nil {
		return err
	}
	start := time.Now()
	for time.Since(start) < d {
		rects, n, err := readMessage(r, bpp)
		if err != nil {
			return err
		}
		if rects < 0 {
			continue // not a framebuffer update
		}
		if rects > 0 {
			res.Updates++
			res.Rectangles += rects
			pixels += n
		}
		if err := request(conn, true, w, h); err != nil {
			return err
		}
	}
	res.Seconds = time.Since(start).Seconds()
	res.FPS = float64(res.Updates) / res.Seconds
	res.MBPerSec = float64(pixels) / res.Seconds / 1e6
	return json.NewEncoder(os.Stdout).Encode(res)
}

// handshake does RFB 3.8's with no security and a shared session, and
// returns the framebuffer's size and bytes per pixel.
func handshake(conn net.Conn, r *bufio.Reader) (w, h, bpp int, err error) {
	ver := make([]byte, 12)
	if _, err = io.ReadFull(r, ver); err != nil {
		return
	}
	if string(ver) != "RFB 003.008\n" {
		return 0, 0, 0, fmt.Errorf("server speaks %q", ver)
	}
	conn.Write(ver)
	n, err := r.ReadByte()
	if err != nil || n == 0 {
		return 0, 0, 0, fmt.Errorf("no security types (%v)", err)
	}
	types := make([]byte, n)
	io.ReadFull(r, types)
	conn.Write([]byte{1}) // None
	var ok uint32
	if err = binary.Read(r, binary.BigEndian, &ok); err != nil || ok != 0 {
		return 0, 0, 0, fmt.Errorf("security result %d (%v)", ok, err)
	}
	conn.Write([]byte{1}) // shared
	var init struct {
		W, H   uint16
		Format [16]byte
		Name   uint32
	}
	if err = binary.Read(r, binary.BigEndian, &init); err != nil {
		return
	}
	if _, err = r.Discard(int(init.Name)); err != nil {
		return
	}
	return int(init.W), int(init.H), int(init.Format[0]) / 8, nil
}

func request(conn net.Conn, incremental bool, w, h int) error {
	b := []byte{3, 0, 0, 0, 0, 0, byte(w >> 8), byte(w), byte(h >> 8), byte(h)}
	if incremental {
		b[1] = 1
	}
	_, err := conn.Write(b)
	return err
}

// readMessage reads one server message: for a framebuffer update, its
// rectangles and their bytes of pixels; -1 for another message.
func readMessage(r *bufio.Reader, bpp int) (rects int, pixels int64, err error) {
	t, err := r.ReadByte()
	if err != nil {
		return 0, 0, err
	}
	switch t {
	case 0: // FramebufferUpdate
		var hdr struct {
			Pad uint8
			N   uint16
		}
		if err := binary.Read(r, binary.BigEndian, &hdr); err != nil {
			return 0, 0, err
		}
		for range int(hdr.N) {
			var rect struct {
				X, Y, W, H uint16
				Enc        int32
			}
			if err := binary.Read(r, binary.BigEndian, &rect); err != nil {
				return 0, 0, err
			}
			var n int
			switch rect.Enc {
			case 0:
				n = int(rect.W) * int(rect.H) * bpp
			case 1:
				n = 4
			default:
				return 0, 0, fmt.Errorf("encoding %d, not asked for", rect.Enc)
			}
			if _, err := r.Discard(n); err != nil {
				return 0, 0, err
			}
			pixels += int64(n)
		}
		return int(hdr.N), pixels, nil
	case 1: // SetColourMapEntries
		var hdr struct {
			Pad         uint8
			First, Many uint16
		}
		if err := binary.Read(r, binary.BigEndian, &hdr); err != nil {
			return 0, 0, err
		}
		_, err = r.Discard(6 * int(hdr.Many))
		return -1, 0, err
	case 2: // Bell
		return -1, 0, nil
	case 3: // ServerCutText
		var hdr struct {
			Pad [3]byte
			N   uint32
		}
		if err := binary.Read(r, binary.BigEndian, &hdr); err != nil {
			return 0, 0, err
		}
		_, err = r.Discard(int(hdr.N))
		return -1, 0, err
	}
	return 0, 0, fmt.Errorf("server message type %d", t)
}
