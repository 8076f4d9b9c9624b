package forkrun

import "testing"

func TestFirstProgram(t *testing.T) {
	for _, c := range []struct{ cmd, want string }{
		{"claude -p hi", "claude"},
		{"./try.sh --fast", "./try.sh"},
		{"FOO=1 ./try.sh", "./try.sh"},
		{"echo go; sleep 1", "echo"},
		{"if true; then x; fi", ""},
		{"for i in 1 2; do echo $i; done", ""},
		{"(cd sub && make)", ""},
		{"$AGENT --go", ""},
		{"'quoted prog'", ""},
		{"cd sub && ./run", ""},
		{"exec ./run", ""},
		{"FOO=1", ""},
	} {
		got, err := firstProgram(c.cmd)
		if err != nil || got != c.want {
			t.Errorf("firstProgram(%q) = %q, %v; want %q", c.cmd, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "   ", "if true; then", "echo 'unclosed"} {
		if _, err := firstProgram(bad); err == nil {
			t.Errorf("firstProgram(%q): no error", bad)
		}
	}
}
