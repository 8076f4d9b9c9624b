package config

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tinehq/tine"
)

func TestDisplay(t *testing.T) {
	c, err := Parse("[display]\nenabled = true\nsize = \"1024x768\"\n")
	if err != nil {
		t.Fatal(err)
	}
	if w, h, err := c.Display.Dimensions(); !c.DisplayOn() || w != 1024 || h != 768 || err != nil {
		t.Errorf("on %v, %dx%d %v", c.DisplayOn(), w, h, err)
	}
	c, err = Parse("[[service]]\nname = \"b\"\ncommand = \"chromium\"\ndisplay = true\n")
	if err != nil || !c.DisplayOn() || !c.Services[0].Display {
		t.Errorf("a display service turns the display on: %v %+v", err, c)
	}
	if w, h, _ := Default().Display.Dimensions(); w != 1280 || h != 800 || Default().DisplayOn() {
		t.Errorf("default %dx%d", w, h)
	}
	for _, size := range []string{"big", "10x10", "1024", "1024x", "99999x10", "-5x600"} {
		_, err := Parse("[display]\nsize = \"" + size + "\"\n")
		if !errors.Is(err, tine.ErrInvalid) || !strings.Contains(err.Error(), "tine.toml:2:") {
			t.Errorf("size %q: %v", size, err)
		}
	}
}

func TestDisplay_Idle(t *testing.T) {
	for doc, want := range map[string]time.Duration{
		"[display]\nenabled = true\n":        DefaultDisplayIdle,
		"[display]\nidle_timeout = \"3s\"\n": 3 * time.Second,
		"[display]\nidle_timeout = \"0\"\n":  0,
	} {
		c, err := Parse(doc)
		if err != nil || c.Display.Idle() != want {
			t.Errorf("%q: %v %v, want %v", doc, c.Display.Idle(), err, want)
		}
	}
	for _, v := range []string{`"-1s"`, `"soon"`, `5`} {
		_, err := Parse("[display]\nidle_timeout = " + v + "\n")
		if !errors.Is(err, tine.ErrInvalid) || !strings.Contains(err.Error(), "tine.toml:2:") {
			t.Errorf("idle_timeout %s: %v", v, err)
		}
	}
}
