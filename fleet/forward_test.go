package fleet

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestAdmitter_Admit: a request signed with the fleet key for this node
// is admitted once; replayed, sent to another node, changed on the way or
// signed with another key, it is refused.
func TestAdmitter_Admit(t *testing.T) {
	key := Key(strings.Repeat("k", 32))
	signed := func(to, body string, k Key) *http.Request {
		r := httptest.NewRequest("POST", "http://n/v1/runs/w%2Fsource/exec?x=1", strings.NewReader(body))
		k.sign(r, "b", to, "", []byte(body))
		return r
	}
	a := NewAdmitter(key, "a")
	r := signed("a", `{"args":["ls"]}`, key)
	replay := r.Clone(r.Context())
	if in, err := a.Admit(r); err != nil || in != (Admitted{From: "b"}) {
		t.Fatalf("Admit of a good request: %+v, %v", in, err)
	}
	replay.Body = http.NoBody
	tampered := signed("a", `{"args":["ls"]}`, key)
	tampered.Body = http.NoBody
	moved := signed("a", "", key)
	moved.URL.RawQuery = "x=2"
	for name, r := range map[string]*http.Request{
		"replayed":      signed("a", "", key), // admitted below first
		"another node":  signed("c", "", key),
		"body changed":  tampered,
		"query changed": moved,
		"another key":   signed("a", "", Key(strings.Repeat("z", 32))),
	} {
		if name == "replayed" {
			if _, err := a.Admit(r.Clone(r.Context())); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := a.Admit(r); !errors.Is(err, ErrForged) {
			t.Errorf("%s: Admit = %v, want ErrForged", name, err)
		}
	}
	stale := signed("a", "", key)
	f := strings.Fields(stale.Header.Get(HeaderAuth))
	stale.Header.Set(HeaderAuth, "v2 1000 "+f[2]+" "+f[3])
	if _, err := a.Admit(stale); !errors.Is(err, ErrForged) {
		t.Errorf("stale: %v", err)
	}
	// A node of an older release signs v1 ("v1 TS HMAC"): refused, saying
	// the releases differ, not only that the signature is wrong.
	old := signed("a", "", key)
	old.Header.Set(HeaderAuth, "v1 "+f[1]+" "+f[3])
	if _, err := a.Admit(old); !errors.Is(err, ErrForged) || !strings.Contains(err.Error(), `signed in format "v1" by node b; this node takes v2: the fleet's nodes run different tine releases`) {
		t.Errorf("a v1 signature: %v; want refused, naming the releases", err)
	}
	// Two requests alike, in the same second, are two: each is admitted.
	if _, err := a.Admit(signed("a", "", key)); err != nil {
		t.Errorf("the first of two requests alike: %v", err)
	}
	if _, err := a.Admit(signed("a", "", key)); err != nil {
		t.Errorf("the second of two requests alike: %v", err)
	}
	if _, err := (*Admitter)(nil).Admit(signed("a", "", key)); !errors.Is(err, ErrForged) {
		t.Errorf("a node without a key admitted a forwarded request: %v", err)
	}
	if _, err := ParseKey("short"); err == nil {
		t.Error("ParseKey took a 5-character key")
	}
}

// TestAdmitter_User: the user a normal user's request is forwarded for is
// signed with it: admitted as signed, and refused when the name is
// changed, added to a request signed for one who sees every workspace,
// removed, or sent twice.
func TestAdmitter_User(t *testing.T) {
	key := Key(strings.Repeat("k", 32))
	a := NewAdmitter(key, "a")
	signed := func(user string) *http.Request {
		r := httptest.NewRequest("GET", "http://n/v1/runs/w%2Fsource/diff", nil)
		r.Header.Set(HeaderUser, "root") // what a caller sent: never signed as it
		key.sign(r, "b", "a", user, nil)
		return r
	}
	if in, err := a.Admit(signed("ann")); err != nil || in != (Admitted{From: "b", User: "ann"}) {
		t.Fatalf("Admit of ann's request: %+v, %v", in, err)
	}
	if in, err := a.Admit(signed("")); err != nil || in.User != "" {
		t.Fatalf("Admit of a request for one who sees all (the caller's %s dropped): %+v, %v", HeaderUser, in, err)
	}
	changed := signed("ann")
	changed.Header.Set(HeaderUser, "bob")
	added := signed("")
	added.Header.Set(HeaderUser, "ann")
	removed := signed("ann")
	removed.Header.Del(HeaderUser)
	twice := signed("ann")
	twice.Header.Add(HeaderUser, "ann")
	unsigned := httptest.NewRequest("GET", "http://n/v1/runs/w%2Fsource/diff", nil)
	unsigned.Header.Set(HeaderUser, "ann")
	for name, r := range map[string]*http.Request{"changed": changed, "added": added, "removed": removed, "twice": twice, "unsigned": unsigned} {
		if !Forwarded(r) {
			t.Errorf("%s: not taken for a forwarded request", name)
		}
		if in, err := a.Admit(r); !errors.Is(err, ErrForged) {
			t.Errorf("%s user: Admit = %+v, %v; want ErrForged", name, in, err)
		}
	}
}
