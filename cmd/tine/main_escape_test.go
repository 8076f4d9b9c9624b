package main

import (
	"bytes"
	"strings"
	"testing"
)

// An error that names something a run or a user typed (here a run
// reference with a terminal escape and a carriage return) reaches the
// terminal escaped.
func TestRun_ErrorsAreEscaped(t *testing.T) {
	t.Setenv("TINE_HOME", t.TempDir())
	t.Setenv("TINE_NO_DAEMON", "1")
	var out, errb bytes.Buffer
	code := run([]string{"init", "/nonexistent/evil\x1b[2K\rok"}, &out, &errb)
	if code == 0 {
		t.Fatalf("tine init of a missing directory: exit 0")
	}
	if s := errb.String(); strings.ContainsAny(s, "\x1b\r") || !strings.Contains(s, `\x1b[2K\rok`) {
		t.Errorf("stderr %q: want the escape and the carriage return shown, not sent", s)
	}
}
