package dashboard

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/effect"
	"github.com/tinehq/tine/egress"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/runtime"
	"github.com/tinehq/tine/supervisor"
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

// A run's page shows what its egress policy refused and the receipts of the
// effects done for it, escaped like everything a run controls.
func TestHandler_RunBoundary(t *testing.T) {
	f := newFixture(t)
	fork := engine.Ref{Workspace: f.src.Workspace, Run: f.fork.Forks[0]}
	sup := filepath.Join(filepath.Dir(runtime.Of(f.e).LogDir(fork)), "sup")
	if err := os.MkdirAll(sup, 0o755); err != nil {
		t.Fatal(err)
	}
	egress.Append(supervisor.EgressPath(sup), egress.Record{Time: time.Now(), Kind: "connect", Addr: "10.231.0.9", Port: 5432, Proto: "tcp"})
	egress.Append(supervisor.EgressPath(sup), egress.Record{Time: time.Now(), Kind: "dns", Host: evilName})
	rec := effect.Receipt{Kind: effect.HTTP, Key: "deploy\x1b[2K-1", Approval: "a12345678", Time: time.Now(), Status: 200, OK: true, BodySHA256: "abc123"}
	err := f.e.Store().Update(f.ctx, func(tx tine.Tx) error {
		b, _ := json.Marshal(rec)
		return tx.AppendEvent(&tine.Event{Workspace: fork.Workspace.ID, Run: fork.Run.ID, Kind: tine.EventEffect, Detail: b})
	})
	if err != nil {
		t.Fatal(err)
	}
	_, body := get(t, New(f.e, ""), "/ui/runs/"+fork.Run.ID, nil)
	checkVisible(t, "Run", body, "Refused by its egress policy", "tcp 10.231.0.9:5432", `evil\x1b[2K\rM  README.md`,
		"External effects done for it", "a12345678", `deploy\x1b[2K-1`, "200 ok", "abc123")
}

// A fork's file named invoice<U+202E>fdp.sh, merged, and a label with
// DEL and a C1 CSI: the event feed and the versions table show them
// escaped, not as invoicehs.pdf. html/template escapes markup, not these.
func TestHandler_BidiAndC1Visible(t *testing.T) {
	f := newFixture(t)
	const rlo, label = "invoice\u202efdp.sh", "v\u009b31m\x7flabel"
	f.write(0, rlo, "x\n")
	if _, err := f.e.Merge(f.ctx, f.fork.Forks[0].ID, engine.MergeOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.e.Checkpoint(f.ctx, f.src.Run.ID, label); err != nil {
		t.Fatal(err)
	}
	_, body := get(t, New(f.e, ""), "/ui/runs/"+f.src.Run.ID, nil)
	for _, raw := range []string{"\u202e", "\u009b", "\x7f"} {
		if strings.Contains(body, raw) {
			t.Errorf("the run page holds %q raw", raw)
		}
	}
	for _, w := range []string{`invoice\u202efdp.sh`, `v\u009b31m\x7flabel`} {
		if !strings.Contains(body, w) {
			t.Errorf("the run page does not show %s", w)
		}
	}
}
