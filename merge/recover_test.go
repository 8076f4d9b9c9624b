//go:build unix

package merge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Environment of the helper process that applies a merge and kills itself.
const (
	helperEnv     = "TINE_MERGE_HELPER"      // "1" in the helper
	helperKillEnv = "TINE_MERGE_KILL_AT"     // index of the hook step to die at
	helperDirsEnv = "TINE_MERGE_HELPER_DIRS" // base, theirs, ours, journal, newline-separated
)

// TestHelperProcess is not a test: re-executed by TestRecover_SIGKILL
// (runc-style), it plans and applies a merge and SIGKILLs itself at a step.
func TestHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		t.Skip("helper process for TestRecover_SIGKILL")
	}
	dirs := strings.Split(os.Getenv(helperDirsEnv), "\n")
	killAt, _ := strconv.Atoi(os.Getenv(helperKillEnv))
	s := testSides{dirs[0], dirs[1], dirs[2]}
	p := planSides(t, s, PlanOptions{})
	n := 0
	applyHook = func(string) error {
		if n == killAt {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way
		}
		n++
		return nil
	}
	if err := Apply(context.Background(), p, s.ours, dirs[3], ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestRecover_SIGKILL(t *testing.T) { testSIGKILL(t, makeSides) }

// testSIGKILL kills an apply of the fixture at each of its steps in turn,
// on sides made by mk: Recover leaves the target as it was, or merged when
// the kill came after the commit mark.
func testSIGKILL(t *testing.T, mk func(testing.TB, tree, tree, tree) testSides) {
	steps := hookStepsOn(t, mk)
	base, theirs, ours, merged := applyFixture()
	for i, step := range steps {
		t.Run(fmt.Sprintf("%02d_%s", i, strings.ReplaceAll(step, "/", "|")), func(t *testing.T) {
			s := mk(t, base, theirs, ours)
			before := treeManifest(t, s.ours)
			j := journalPath(t)
			killedApply(t, s, j, i)
			if err := Recover(context.Background(), j, nil); err != nil {
				t.Fatal(err)
			}
			want := before
			if step == "cleanup" {
				want = merged.manifest()
			}
			if d := cmp.Diff(want, treeManifest(t, s.ours)); d != "" {
				t.Errorf("target after kill at %s and Recover (-want +got):\n%s", step, d)
			}
			checkNoStaging(t, s.ours)
			if _, err := os.Lstat(j); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("journal left behind: %v", err)
			}
		})
	}
}

// killedApply runs the helper process on s, which dies by SIGKILL at hook
// step killAt, leaving journal j behind.
func killedApply(t *testing.T, s testSides, j string, killAt int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"=1", helperKillEnv+"="+strconv.Itoa(killAt),
		helperDirsEnv+"="+strings.Join([]string{s.base, s.theirs, s.ours, j}, "\n"))
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	if st, ok := exit.Sys().(syscall.WaitStatus); !ok || st.Signal() != syscall.SIGKILL {
		t.Fatalf("helper did not die by SIGKILL: %v\n%s", err, out)
	}
}

func TestRecover_Idempotent(t *testing.T) {
	steps := hookSteps(t)
	base, theirs, ours, _ := applyFixture()
	last := len(steps) - 3 // the last step before the commit mark
	for partial := 1; partial < 12; partial += 3 {
		t.Run(strconv.Itoa(partial), func(t *testing.T) {
			s := makeSides(t, base, theirs, ours)
			before := treeManifest(t, s.ours)
			j := journalPath(t)
			killedApply(t, s, j, last)
			interruptedRecover(t, j, partial)
			if err := Recover(context.Background(), j, nil); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(before, treeManifest(t, s.ours)); d != "" {
				t.Errorf("target (-want +got):\n%s", d)
			}
			if err := Recover(context.Background(), j, nil); err != nil {
				t.Errorf("second Recover: %v", err)
			}
		})
	}
}

// interruptedRecover undoes only the last n steps of journal j, as a
// Recover killed part-way would.
func interruptedRecover(t *testing.T, j string, n int) {
	t.Helper()
	jr, err := readJournal(j)
	if err != nil {
		t.Fatal(err)
	}
	tree, err := openTxTree(string(jr.Target))
	if err != nil {
		t.Fatal(err)
	}
	defer tree.close()
	for i := len(jr.Steps) - 1; i >= 0 && i >= len(jr.Steps)-n; i-- {
		if err := undoStep(tree, string(jr.Staging), jr.Steps[i]); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRecover_NoJournal(t *testing.T) {
	if err := Recover(context.Background(), journalPath(t), nil); err != nil {
		t.Errorf("Recover without a journal = %v", err)
	}
}

func TestRecover_CorruptJournal(t *testing.T) {
	j := journalPath(t)
	if err := os.WriteFile(j, []byte(`{"version":1,"target":"/","staging":"../../etc"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Recover(context.Background(), j, nil); err == nil {
		t.Error("Recover accepted a journal whose staging directory is outside the target")
	}
}

func TestRawPath_RoundTrip(t *testing.T) {
	for _, p := range []rawPath{"plain", "sp ace", "new\nline", "\xff\xfe", `{"base64":"x"}`} {
		b, err := p.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var got rawPath
		if err := got.UnmarshalJSON(b); err != nil || got != p {
			t.Errorf("%q: round trip gave %q, %v (json %s)", p, got, err, b)
		}
	}
}

// TestApply_CommittedRecordedOnce: the caller's record (ApplyOptions.
// Committed) runs once the merge has committed; if the apply stops after
// that, Recover hands the journal's note back so the record is completed,
// and a record that failed is retried by Recover.
func TestApply_CommittedRecordedOnce(t *testing.T) {
	base, theirs, ours, merged := applyFixture()
	s := makeSides(t, base, theirs, ours)
	p := planSides(t, s, PlanOptions{})
	j := journalPath(t)
	calls := 0
	failRecord := errors.New("store busy")
	o := ApplyOptions{Note: []byte(`{"run":"r1"}`), Committed: func() error { calls++; return failRecord }}
	if err := Apply(context.Background(), p, s.ours, j, o); !errors.Is(err, failRecord) || calls != 1 {
		t.Fatalf("Apply = %v after %d record(s), want the record's error after one", err, calls)
	}
	var note string
	if err := Recover(context.Background(), j, func(n json.RawMessage) error { note = string(n); return nil }); err != nil {
		t.Fatal(err)
	}
	if note != `{"run":"r1"}` {
		t.Errorf("Recover handed back %q, want the apply's note", note)
	}
	if d := cmp.Diff(merged.manifest(), treeManifest(t, s.ours)); d != "" {
		t.Errorf("target after Recover (-want +got):\n%s", d)
	}
	if _, err := os.Lstat(j); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("journal left behind: %v", err)
	}
}
