package dashboard

import (
	"net/url"
	"strings"
	"testing"

	"github.com/tinehq/tine/engine"
)

// Names and a label a fork controls that would rewrite what a person reads:
// a file name that erases its line to pass for README.md, one that is not
// UTF-8, and an approach that moves the cursor up.
const (
	evilName     = "evil\x1b[2K\rM  README.md"
	badName      = "bad\xffname"
	evilApproach = "sneaky\x1b[1A\rapproach"
)

// checkVisible fails if the page holds a raw ESC, CR or byte that is not
// UTF-8, or lacks any of want.
func checkVisible(t *testing.T, page, body string, want ...string) {
	t.Helper()
	if strings.ContainsAny(body, "\x1b\r") || strings.Contains(body, "\xff") {
		t.Errorf("%s: a fork's control characters reach the page raw", page)
	}
	for _, w := range want {
		if !strings.Contains(body, w) {
			t.Errorf("%s: no %s in the page", page, w)
		}
	}
}

func TestHandler_ControlCharactersVisible(t *testing.T) {
	f := newFixture(t)
	f.write(0, evilName, "x\n")
	f.write(0, badName, "\x1b]0;title\a\n")
	fork, err := f.e.Fork(f.ctx, f.src.Run.ID, engine.ForkOptions{Copies: 1, Approaches: []string{evilApproach}})
	if err != nil {
		t.Fatal(err)
	}
	h := New(f.e, "")
	a, b := f.fork.Forks[0], f.fork.Forks[1]
	// html/template writes the quote of a quoted name as &#34;.
	evil, bad := `&#34;evil\x1b[2K\rM  README.md&#34;`, `&#34;bad\xffname&#34;`
	approach := `sneaky\x1b[1A\rapproach`

	_, body := get(t, h, "/ui/groups/"+f.fork.Group.ID+"?a="+a.ID+"&b="+b.ID, nil)
	checkVisible(t, "GroupPair", body, evil, bad, `\x1b]0;title\a`)
	_, body = get(t, h, "/ui/groups/"+fork.Group.ID, nil)
	checkVisible(t, "Group", body, approach)
	_, body = get(t, h, "/ui/", nil)
	checkVisible(t, "Overview", body, approach)
	_, body = get(t, h, "/ui/runs/"+fork.Forks[0].ID, nil)
	checkVisible(t, "Run", body, approach)
	form := url.Values{"csrf": {f.csrfOf(h)}, "mode": {"merge"}, "run": {a.ID}}
	_, body, _ = post(t, h, "/ui/groups/"+f.fork.Group.ID+"/choose", form, nil)
	checkVisible(t, "ConfirmPlan", body, evil, bad)
}
