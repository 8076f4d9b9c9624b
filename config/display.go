package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// DefaultDisplaySize is the size of a run's display when [display] gives
// none.
const DefaultDisplaySize = "1280x800"

// DefaultDisplayIdle is how long a fork's display may go unwatched and
// undriven before it is stopped, when [display] says nothing.
const DefaultDisplayIdle = 10 * time.Minute

// Display is [display]: whether each run has a display of its own (an X
// server with a VNC port and a window manager, in the run's namespaces)
// and its size, "WIDTHxHEIGHT" in pixels. A service with display = true
// turns it on too. IdleTimeout is how long a fork's display may have no
// VNC client and no screenshot or input before it is stopped ("0": never;
// absent: DefaultDisplayIdle); see Idle.
type Display struct {
	Enabled     bool      `toml:"enabled"`
	Size        string    `toml:"size"`
	IdleTimeout *Duration `toml:"idle_timeout"`
}

// Idle returns how long a fork's display may stay idle before it is
// stopped; 0 means never.
func (d Display) Idle() time.Duration {
	if d.IdleTimeout == nil {
		return DefaultDisplayIdle
	}
	return d.IdleTimeout.Duration
}

// Limits of a display's size in pixels.
const (
	MinDisplaySide = 64
	MaxDisplaySide = 8192
)

// DisplayOn reports whether runs of this configuration have a display: [display]
// enabled, or a service that wants one.
func (c *Config) DisplayOn() bool {
	if c.Display.Enabled {
		return true
	}
	for _, s := range c.Services {
		if s.Display {
			return true
		}
	}
	return false
}

// Dimensions returns the display's width and height, the default's when
// Size is empty.
func (d Display) Dimensions() (w, h int, err error) {
	s := d.Size
	if s == "" {
		s = DefaultDisplaySize
	}
	ws, hs, ok := strings.Cut(s, "x")
	w, errW := strconv.Atoi(ws)
	h, errH := strconv.Atoi(hs)
	if !ok || errW != nil || errH != nil || !sideOK(w) || !sideOK(h) {
		return 0, 0, fmt.Errorf("display: size %q is not WIDTHxHEIGHT, each %d to %d pixels", d.Size, MinDisplaySide, MaxDisplaySide)
	}
	return w, h, nil
}

func sideOK(n int) bool { return n >= MinDisplaySide && n <= MaxDisplaySide }

func (d Display) check() error {
	if _, _, err := d.Dimensions(); err != nil {
		return &keyError{[]string{"display", "size"}, err}
	}
	if d.Idle() < 0 {
		return &keyError{[]string{"display", "idle_timeout"}, fmt.Errorf("display: idle_timeout %v is negative (0 keeps a fork's display up however idle)", d.Idle())}
	}
	return nil
}
