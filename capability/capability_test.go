package capability

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/sqlite"
)

// t0 is the fixed time the tests' clock starts at.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// lineage is the runs of the tests: workspace w1 has the source src with
// direct forks a and b, and a's fork g; workspace w2 has the source u.
var lineage = []struct{ id, ws, parent string }{
	{"src", "w1", ""}, {"a", "w1", "src"}, {"b", "w1", "src"}, {"g", "w1", "a"}, {"u", "w2", ""},
}

// fixture is a store holding lineage, each run with a capability, and a
// verifier over it whose clock the test moves.
type fixture struct {
	st   *sqlite.Store
	caps map[string]Capability
	runs map[string]*tine.Run
	now  time.Time
	v    *Verifier
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "tine.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := &fixture{st: st, caps: map[string]Capability{}, runs: map[string]*tine.Run{}, now: t0}
	f.v = NewVerifier(Keyring{st}, Keyring{st}, WithClock(func() time.Time { return f.now }))
	err = st.Update(context.Background(), func(tx tine.Tx) error { return f.fill(tx) })
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// fill puts the workspaces, runs and capabilities of lineage into tx.
func (f *fixture) fill(tx tine.Tx) error {
	for _, ws := range []string{"w1", "w2"} {
		if err := tx.PutWorkspace(&tine.Workspace{ID: ws, Name: ws, Path: "/" + ws}); err != nil {
			return err
		}
	}
	for _, l := range lineage {
		r := &tine.Run{ID: l.id, Workspace: l.ws, Name: l.id, Parent: l.parent, Role: tine.RoleFork, State: tine.StateActive}
		if l.parent == "" {
			r.Role = tine.RoleSource
		}
		if err := tx.PutRun(r); err != nil {
			return err
		}
		c, err := Issue(tx, l.id)
		if err != nil {
			return err
		}
		f.runs[l.id], f.caps[l.id] = r, c
	}
	return nil
}

// sign signs a control request of run for method at the fixture's time.
func (f *fixture) sign(t *testing.T, run, method string, args any) Request {
	t.Helper()
	req, err := Sign(f.caps[run], PurposeControl, method, args, f.now)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// authorize does what the daemon does with a request to do action to
// target: verify it, then scope its run against target.
func (f *fixture) authorize(req Request, target string, action tine.Action) error {
	run, err := f.v.Verify(context.Background(), req, PurposeControl, string(action))
	if err != nil {
		return err
	}
	return Scope(f.runs[run], f.runs[target], action)
}

func TestAuthorize(t *testing.T) {
	tests := []struct {
		name   string
		signer string
		target string
		action tine.Action
		change func(t *testing.T, f *fixture, req *Request) // before the request is verified
		want   error
	}{
		{"Valid", "src", "a", tine.ActionInspect, nil, nil},
		{"ValidAtWindowEdge", "a", "a", tine.ActionInspect, later(DefaultWindow), nil},
		{"ValidSlightlyAhead", "a", "a", tine.ActionInspect, later(-DefaultSkew), nil},
		{"Expired", "src", "a", tine.ActionInspect, later(DefaultWindow + time.Nanosecond), ErrExpired},
		{"FromTheFuture", "src", "a", tine.ActionInspect, later(-DefaultSkew - time.Second), ErrExpired},
		{"Replayed", "src", "a", tine.ActionInspect, replay, ErrReplayed},
		{"ReplayedLate", "src", "a", tine.ActionInspect, chain(replay, later(DefaultWindow)), ErrReplayed},
		{"ForgedMAC", "src", "a", tine.ActionInspect, func(_ *testing.T, _ *fixture, r *Request) {
			r.MAC = flip(r.MAC)
		}, ErrForged},
		{"ForgedArgs", "src", "a", tine.ActionInspect, func(_ *testing.T, _ *fixture, r *Request) {
			r.Args = json.RawMessage(`{"run":"g"}`)
		}, ErrForged},
		{"ForgedIssuedAt", "src", "a", tine.ActionInspect, func(_ *testing.T, _ *fixture, r *Request) {
			r.IssuedAt = r.IssuedAt.Add(time.Second)
		}, ErrForged},
		{"ForgedRun", "src", "a", tine.ActionInspect, func(_ *testing.T, _ *fixture, r *Request) {
			r.Run = "b"
		}, ErrForged},
		{"OtherRunsSecret", "src", "a", tine.ActionInspect, func(t *testing.T, f *fixture, r *Request) {
			c := f.caps["b"]
			c.Run = "src"
			*r = mustSign(t, c, r.Purpose, r.Method, f.now)
		}, ErrForged},
		{"WrongPurpose", "src", "a", tine.ActionInspect, func(t *testing.T, f *fixture, r *Request) {
			*r = mustSign(t, f.caps["src"], "tine/hook/v1", r.Method, f.now)
		}, ErrForged},
		{"WrongMethod", "src", "a", tine.ActionInspect, func(t *testing.T, f *fixture, r *Request) {
			*r = mustSign(t, f.caps["src"], r.Purpose, string(tine.ActionFork), f.now)
		}, ErrForged},
		{"Malformed", "src", "a", tine.ActionInspect, func(_ *testing.T, _ *fixture, r *Request) {
			r.Nonce = ""
		}, ErrForged},
		{"Unknown", "src", "a", tine.ActionInspect, func(t *testing.T, f *fixture, r *Request) {
			f.caps["nobody"] = Capability{Run: "nobody", Secret: f.caps["src"].Secret, Generation: 1}
			*r = mustSign(t, f.caps["nobody"], r.Purpose, r.Method, f.now)
		}, ErrRevoked},
		{"Revoked", "src", "a", tine.ActionInspect, func(t *testing.T, f *fixture, _ *Request) {
			update(t, f.st, func(tx tine.Tx) error { return Revoke(tx, "src") })
		}, ErrRevoked},
		{"OldCapabilityAfterFork", "src", "a", tine.ActionInspect, fork, ErrRevoked},
		{"OldTokenForgedToNewGeneration", "src", "a", tine.ActionInspect, func(t *testing.T, f *fixture, r *Request) {
			fork(t, f, r)
			old := f.caps["src"]
			old.Generation++
			*r = mustSign(t, old, r.Purpose, r.Method, f.now)
		}, ErrForged},
		{"SourceToGrandchild", "src", "g", tine.ActionInspect, nil, ErrScope},
		{"Sibling", "a", "b", tine.ActionInspect, nil, ErrScope},
		{"SiblingMerge", "a", "b", tine.ActionMerge, nil, ErrScope},
		{"UnrelatedWorkspace", "u", "src", tine.ActionInspect, nil, ErrScope},
		{"ForkToSelf", "a", "a", tine.ActionDiscard, nil, nil},
		{"ForkMergeIntoParent", "a", "src", tine.ActionMerge, nil, nil},
		{"ForkDiscardParent", "a", "src", tine.ActionDiscard, nil, ErrScope},
		{"GrandchildMergeIntoSource", "g", "src", tine.ActionMerge, nil, ErrScope},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			req := f.sign(t, tt.signer, string(tt.action), map[string]string{"run": tt.target})
			if tt.change != nil {
				tt.change(t, f, &req)
			}
			err := f.authorize(req, tt.target, tt.action)
			t.Logf("authorize: %v", err)
			if tt.want == nil && err != nil || !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if tt.want != nil && !errors.Is(err, tine.ErrPrivilege) {
				t.Errorf("err = %v does not wrap tine.ErrPrivilege", err)
			}
		})
	}
}

// later moves the clock on by d after the request was signed.
func later(d time.Duration) func(*testing.T, *fixture, *Request) {
	return func(_ *testing.T, f *fixture, _ *Request) { f.now = f.now.Add(d) }
}

// replay verifies the request once, successfully, before the test does again.
func replay(t *testing.T, f *fixture, r *Request) {
	if _, err := f.v.Verify(context.Background(), *r, PurposeControl, r.Method); err != nil {
		t.Fatalf("first use: %v", err)
	}
}

// fork forks the request's run through Rotate, as the engine would.
func fork(t *testing.T, f *fixture, r *Request) {
	_, err := Rotate(context.Background(), f.st, r.Run, func(context.Context) ([]string, error) { return nil, nil })
	if err != nil {
		t.Fatal(err)
	}
}

// chain runs changes in order.
func chain(fns ...func(*testing.T, *fixture, *Request)) func(*testing.T, *fixture, *Request) {
	return func(t *testing.T, f *fixture, r *Request) {
		for _, fn := range fns {
			fn(t, f, r)
		}
	}
}

// flip changes the first character of a base64url string.
func flip(s string) string {
	if s[0] == 'A' {
		return "B" + s[1:]
	}
	return "A" + s[1:]
}

func mustSign(t *testing.T, c Capability, purpose, method string, now time.Time) Request {
	req, err := Sign(c, purpose, method, map[string]string{"run": "a"}, now)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func update(t *testing.T, st tine.Store, fn func(tine.Tx) error) {
	t.Helper()
	if err := st.Update(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

func TestVerify_JSONRoundTrip(t *testing.T) {
	f := newFixture(t)
	args := map[string]any{"cmd": []string{"go", "test", "./..."}, "note": "<a & b>", "n": 1.5}
	req := f.sign(t, "a", "send_work", args)
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	var got Request
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if run, err := f.v.Verify(context.Background(), got, PurposeControl, "send_work"); err != nil || run != "a" {
		t.Errorf("Verify after a JSON round trip = %q, %v; want a", run, err)
	}
}

func TestMessage_Unambiguous(t *testing.T) {
	base := Request{Purpose: "p", Run: "ab", Generation: 1, Nonce: "n", IssuedAt: t0, Method: "m", Args: json.RawMessage(`1`)}
	shifted := base
	shifted.Run, shifted.Nonce = "a", "bn"
	if string(base.message()) == string(shifted.message()) {
		t.Error("moving bytes between fields gives the same message")
	}
}

func TestRotate(t *testing.T) {
	f := newFixture(t)
	old := f.caps["a"]
	var during error
	caps, err := Rotate(context.Background(), f.st, "a", func(ctx context.Context) ([]string, error) {
		req := f.sign(t, "a", "inspect", nil)
		_, during = f.v.Verify(ctx, req, PurposeControl, "inspect")
		update(t, f.st, func(tx tine.Tx) error {
			return tx.PutRun(&tine.Run{ID: "a2", Workspace: "w1", Name: "a2", Parent: "a", Role: tine.RoleFork, State: tine.StateActive})
		})
		return []string{"a2"}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(during, ErrRevoked) {
		t.Errorf("parent's capability during the clone: %v, want ErrRevoked", during)
	}
	if caps["a"].Generation != old.Generation+1 || caps["a2"].Generation != 1 || len(caps) != 2 {
		t.Errorf("Rotate issued %v, want a at generation %d and a2 at 1", caps, old.Generation+1)
	}
	for run, c := range caps {
		f.caps[run] = c
		if _, err := f.v.Verify(context.Background(), f.sign(t, run, "inspect", nil), PurposeControl, "inspect"); err != nil {
			t.Errorf("fresh capability of %s: %v", run, err)
		}
	}
}

func TestRotate_CloneFails(t *testing.T) {
	f := newFixture(t)
	boom := errors.New("boom")
	caps, err := Rotate(context.Background(), f.st, "a", func(context.Context) ([]string, error) { return nil, boom })
	if !errors.Is(err, boom) {
		t.Errorf("err = %v, want the clone's error", err)
	}
	if c, ok := caps["a"]; !ok || c.Generation != 2 {
		t.Errorf("parent not reissued: %v", caps)
	}
}

func TestToken(t *testing.T) {
	c, err := New("rabc")
	if err != nil {
		t.Fatal(err)
	}
	c.Generation = 3
	tests := []struct {
		name  string
		token string
		ok    bool
	}{
		{"Good", c.Token(), true},
		{"Newline", c.Token() + "\n", true},
		{"WrongPrefix", strings.Replace(c.Token(), "tinecap1", "tinecap2", 1), false},
		{"ZeroGeneration", fmt.Sprintf("tinecap1.rabc.0.%s", b64.EncodeToString(c.Secret)), false},
		{"ShortSecret", "tinecap1.rabc.3.AAAA", false},
		{"NoRun", fmt.Sprintf("tinecap1..3.%s", b64.EncodeToString(c.Secret)), false},
		{"ExtraPart", c.Token() + ".x", false},
		{"Empty", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.token)
			if !tt.ok {
				if !errors.Is(err, ErrForged) {
					t.Errorf("Parse = %v, want ErrForged", err)
				}
				return
			}
			if err != nil || got.Token() != c.Token() {
				t.Errorf("Parse = %v, %v; want %v", got, err, c)
			}
		})
	}
}

func TestCapability_StringHidesSecret(t *testing.T) {
	c := Capability{Run: "rabc", Secret: []byte("supersecretsupersecretsupersecre"), Generation: 2}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		if s := fmt.Sprintf(verb, c); strings.Contains(s, "supersecret") || strings.Contains(s, b64.EncodeToString(c.Secret)) {
			t.Errorf("%s shows the secret: %s", verb, s)
		}
	}
}

func TestWriteFile(t *testing.T) {
	c, err := New("rabc")
	if err != nil {
		t.Fatal(err)
	}
	c.Generation = 1
	path := filepath.Join(t.TempDir(), "capability")
	if err := WriteFile(path, c, -1, -1); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode = %v, %v; want 0600", fi.Mode(), err)
	}
	got, err := ReadFile(path)
	if err != nil || got.Token() != c.Token() {
		t.Errorf("ReadFile = %v, %v", got, err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}
}
