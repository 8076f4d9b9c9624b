package runtime

import (
	"strings"
	"testing"

	"github.com/tinehq/tine/confine"
)

func TestCRIUConfinable(t *testing.T) {
	src := &confine.Applied{Seccomp: true, Denied: 29}
	fork := &confine.Applied{Seccomp: true, Denied: 40, DenyMounts: true, Landlock: 7, Writable: []string{"/w"}, Caps: 1}
	for _, tc := range []struct {
		name      string
		src, fork *confine.Applied
		want      string // "" or a phrase of the refusal
	}{
		{"confine off", nil, &confine.Applied{}, ""},
		{"same as the parent", src, src, ""},
		{"a confined fork", src, fork, "a Landlock ruleset, dropped capabilities, a stricter seccomp filter"},
	} {
		got := criuConfinable(tc.src, tc.fork)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: criuConfinable = %q, want %q", tc.name, got, tc.want)
		}
	}
}
