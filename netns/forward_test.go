package netns

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// echoServer accepts on a loopback port and echoes each connection until the
// client half-closes, then half-closes back.
func echoServer(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
				c.(*net.TCPConn).CloseWrite()
			}()
		}
	}()
	return ln
}

// startForward runs Forward on a fresh loopback listener towards dial and
// returns the listener's address, a cancel func and Forward's result.
func startForward(t *testing.T, dial func(context.Context) (net.Conn, error)) (string, context.CancelFunc, <-chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Forward(ctx, ln, dial); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String(), cancel, done
}

func dialTo(addr string) func(context.Context) (net.Conn, error) {
	return func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}
}

func wait(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("Forward did not return")
		return nil
	}
}

func TestForward_HalfClose(t *testing.T) {
	echo := echoServer(t)
	addr, _, _ := startForward(t, dialTo(echo.Addr().String()))
	for range 3 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		msg := []byte("hello through the proxy")
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		// Our FIN must reach the echo server, and its FIN must come back:
		// ReadAll only returns once the proxy half-closes towards us.
		if err := c.(*net.TCPConn).CloseWrite(); err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(c)
		if err != nil || string(got) != string(msg) {
			t.Fatalf("ReadAll = %q, %v", got, err)
		}
		c.Close()
	}
}

func TestForward_ServerFirst(t *testing.T) {
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	got := make(chan string, 1)
	go func() {
		c, err := up.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.WriteString(c, "banner")
		c.(*net.TCPConn).CloseWrite()
		b, _ := io.ReadAll(c) // still readable after our half-close
		got <- string(b)
	}()
	addr, _, _ := startForward(t, dialTo(up.Addr().String()))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if b, err := io.ReadAll(c); err != nil || string(b) != "banner" {
		t.Fatalf("ReadAll = %q, %v", b, err)
	}
	io.WriteString(c, "reply after EOF")
	c.(*net.TCPConn).CloseWrite()
	if s := <-got; s != "reply after EOF" {
		t.Fatalf("upstream read %q", s)
	}
}

func TestForward_Cancel(t *testing.T) {
	echo := echoServer(t)
	addr, cancel, done := startForward(t, dialTo(echo.Addr().String()))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(c, "x")
	if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := wait(t, done); err != nil {
		t.Fatalf("Forward = %v, want nil", err)
	}
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("open connection survived cancel")
	}
	if c2, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c2.Close()
		t.Fatal("listener still accepting after cancel")
	}
}

func TestForward_ListenerClosed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- Forward(context.Background(), ln, dialTo("127.0.0.1:1")) }()
	ln.Close()
	if err := wait(t, done); err != nil {
		t.Fatalf("Forward = %v, want nil", err)
	}
}

func TestForward_DialError(t *testing.T) {
	fail := func(context.Context) (net.Conn, error) { return nil, errors.New("no upstream") }
	addr, _, _ := startForward(t, fail)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if n, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatalf("Read = %d, nil; want the connection closed", n)
	}
}
